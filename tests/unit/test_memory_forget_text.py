"""``remove_entries``: the lines of the forgotten entries go, with the blank line that set a
removed block apart; every other line stays byte for byte (issue 27 §1)."""

from __future__ import annotations

import pytest

from yuxi.services.memory import remove_entries, split_entries


def _forget(text: str, *texts: str) -> str:
    return remove_entries(text, [e for e in split_entries(text) if e.text in texts])


@pytest.mark.parametrize(
    ("text", "forget", "expected"),
    [
        ("- a\n- b\n- c\n", ["- b"], "- a\n- c\n"),
        ("a\n\nb\n\nc\n", ["b"], "a\n\nc\n"),
        ("a\n\nb\n", ["b"], "a\n"),
        ("a\n\nb\n", ["a"], "b\n"),
        ("- 我喜欢乌龙茶\r\n- 住在上海\r\n", ["- 住在上海"], "- 我喜欢乌龙茶\r\n"),
        ("- a\n  continued\n- b\n", ["- a\n  continued"], "- b\n"),
        ("- a\n", ["- a"], ""),
        ("# Notes\n- a\n\n- b\n", ["- a", "- b"], "# Notes\n"),
        ("x\n\n\n- dup\n\n- dup\n", ["- dup"], "x\n\n"),
    ],
)
def test_exactly_the_entries_lines_go(text: str, forget: list[str], expected: str) -> None:
    assert _forget(text, *forget) == expected


def test_other_entries_are_unchanged() -> None:
    text = "# Me\n\n- keep 1\n- drop\n- keep 2\n\nplain\n\n- drop 2\n"
    after = _forget(text, "- drop", "- drop 2")
    assert [e.text for e in split_entries(after)] == ["# Me", "- keep 1", "- keep 2", "plain"]
