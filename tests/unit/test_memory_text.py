"""The pure text rules of remember_memory."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yuxi.errors import InvalidArgument, MemoryConflict
from yuxi.services._memory_text import apply_add, apply_replace, find_whole_lines
from yuxi.utils.string_utils import check_text


def test_add_to_empty_file() -> None:
    edit = apply_add("", "  hello  ")
    assert (edit.changed, edit.text, edit.start_line, edit.end_line) == (True, "hello\n", 1, 1)


def test_add_to_blank_file_treats_it_as_empty() -> None:
    assert apply_add(" \n\n\t\n", "x").text == "x\n"


def test_add_appends_after_a_blank_line_and_strips_trailing_space() -> None:
    edit = apply_add("a\nb\n\n\n", "c\nd")
    assert edit.text == "a\nb\n\nc\nd\n"
    assert (edit.start_line, edit.end_line) == (4, 5)


def test_duplicate_detection_is_line_aligned_and_whitespace_normalised() -> None:
    base = "# Memory\n\n- likes   tea\nlives in  杭州\n"
    assert find_whole_lines(base, "lives in 杭州") == (4, 4)
    assert find_whole_lines(base, "- likes tea\nlives in 杭州") == (3, 4)
    assert find_whole_lines(base, "likes tea") is None  # fragment of a longer line
    assert find_whole_lines(base, "杭州") is None
    assert apply_add(base, "lives in 杭州").changed is False


def test_multi_line_duplicate_must_be_consecutive() -> None:
    assert find_whole_lines("a\nx\nb\n", "a\nb") is None


def test_replace_exactly_once() -> None:
    edit = apply_replace("one\ntwo oolong\nthree\n", "oolong", "pu-erh")
    assert edit.text == "one\ntwo pu-erh\nthree\n"
    assert (edit.start_line, edit.end_line) == (2, 2)


@pytest.mark.parametrize(("base", "old"), [("x x", "x"), ("aaa", "aa"), ("X", "x"), ("", "a")])
def test_replace_conflicts(base: str, old: str) -> None:
    with pytest.raises(MemoryConflict) as info:
        apply_replace(base, old, "new")
    assert info.value.code == "memory_conflict"


def test_replaces_is_kept_exactly_not_stripped() -> None:
    assert apply_replace("a  b", "  b", "c").text == "ac"
    with pytest.raises(MemoryConflict):
        apply_replace("a b", "  b", "c")


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("记" * 1365 + "a", True),
        ("记" * 1365 + "ab", False),
        ("🍵" * 1024, True),
        ("🍵" * 1025, False),
    ],
)
def test_byte_limit_boundary(value: str, ok: bool) -> None:
    if ok:
        assert check_text("content", value, max_bytes=4096) == value
    else:
        with pytest.raises(InvalidArgument):
            check_text("content", value, max_bytes=4096)


@given(
    st.lists(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), min_size=1), max_size=5),
    st.text(min_size=1).filter(lambda s: s.strip() and "\x00" not in s),
)
def test_add_is_idempotent(lines: list[str], content: str) -> None:
    """Adding the same content twice never writes twice (crash-retry convergence)."""
    try:
        content.encode("utf-8")
    except UnicodeEncodeError:
        return
    base = "\n".join(lines)
    once = apply_add(base, content)
    twice = apply_add(once.text, content)
    assert twice.changed is False
    assert twice.text == once.text
