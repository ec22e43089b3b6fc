"""The pure text rules of remember_memory."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yuxi.errors import InvalidArgument, MemoryConflict
from yuxi.services.memory import apply_add, apply_replace, find_whole_lines
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


def _whole_lines_by_scan(base: str, content: str) -> tuple[int, int] | None:
    """The rule spelled out: normalise every line, then compare line runs one by one."""
    needle = [" ".join(line.split()) for line in content.splitlines() if line.split()]
    hay = [
        (number, " ".join(line.split()))
        for number, line in enumerate(base.splitlines(), start=1)
        if line.split()
    ]
    for i in range(len(hay) - len(needle) + 1) if needle else ():
        if [norm for _, norm in hay[i : i + len(needle)]] == needle:
            return hay[i][0], hay[i + len(needle) - 1][0]
    return None


_SPACES_AND_BREAKS = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\u3000"


@given(
    st.lists(st.sampled_from(["ab", "a", "b", "记忆", "用户", *_SPACES_AND_BREAKS]), max_size=40),
    st.lists(st.sampled_from(["ab", "a", "b", "记忆", " ", "\t", "\n", "\u3000"]), max_size=12),
)
def test_whole_line_search_is_the_line_by_line_rule(parts: list[str], words: list[str]) -> None:
    """find_whole_lines' shortcut (no match in the whitespace-collapsed file, no match at all)
    never changes its answer, for every line break and space str.splitlines / str.split know."""
    base, content = "".join(parts), "".join(words)
    assert find_whole_lines(base, content) == _whole_lines_by_scan(base, content)
    for shift in (1, 2):  # content taken from the file itself: matches are likely
        lines = base.splitlines()
        piece = "\n".join(lines[shift : shift + 2])
        assert find_whole_lines(base, piece) == _whole_lines_by_scan(base, piece)
