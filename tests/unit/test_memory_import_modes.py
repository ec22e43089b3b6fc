"""What an import makes of MEMORY.md (``plan_import``, design.md §10.5), over generated files:
``replace`` is the imported bytes; ``append`` keeps the current bytes (blank lines at its end
aside) and its entries are exactly the current ones followed by the imported ones that were not
there yet, each once, in order; the counts say so."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yuxi.errors import FileTooLarge, InvalidArgument
from yuxi.limits import MEMORY_FILE_MAX_BYTES
from yuxi.services.memory import check_import_mode, plan_import, split_entries

_WORDS = st.sampled_from(["tea", "茶", "cat", "猫", "Hangzhou", "杭州", "run", "跑步", "a  b"])
_LINE = st.lists(_WORDS, min_size=1, max_size=3).map(" ".join)
_ENTRY = st.one_of(
    _LINE.map(lambda t: f"- {t}"),
    _LINE.map(lambda t: f"* {t}"),
    _LINE.map(lambda t: f"1. {t}"),
    _LINE.map(lambda t: f"# {t}"),
    _LINE,  # a paragraph
    st.tuples(_LINE, _LINE).map(lambda p: f"- {p[0]}\n  {p[1]}"),  # an item with a continuation
)


#: A Markdown list item's marker (written out here, not taken from the code under test).
_MARKER = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:\s|$)")


def _strip_marker(text: str) -> str:
    return _MARKER.sub("", text, count=1)


@st.composite
def _file(draw: st.DrawFn) -> str:
    entries = draw(st.lists(_ENTRY, max_size=6))
    text = ""
    for entry in entries:
        lists = text and _strip_marker(entry) != entry and draw(st.booleans())
        text += ("" if not text else "\n" if lists else "\n\n") + entry
    return text + draw(st.sampled_from(["", "\n", "\n\n"]))


def _key(text: str) -> str:
    return " ".join(_strip_marker(text).split())


@settings(max_examples=300, deadline=None)
@given(current=_file(), imported=_file())
def test_append_keeps_the_current_entries_and_adds_the_new_ones_once(
    current: str, imported: str
) -> None:
    plan = plan_import(current.encode(), imported.encode(), "append")
    result = plan.data.decode()
    have = [e.text for e in split_entries(current)]
    seen = {_key(t) for t in have}
    fresh = []
    for entry in split_entries(imported):
        if _key(entry.text) not in seen:
            seen.add(_key(entry.text))
            fresh.append(entry.text)
    assert [e.text for e in split_entries(result)] == have + fresh
    assert (plan.current_entries, plan.imported_entries, plan.new_entries) == (
        len(have),
        len(split_entries(imported)),
        len(fresh),
    )
    if fresh:
        assert result.startswith(current.rstrip("\r\n") if have else "")
        assert result.endswith("\n")
    else:
        assert plan.data == current.encode()  # nothing new: not a byte changed


@settings(max_examples=100, deadline=None)
@given(current=_file(), imported=_file())
def test_replace_is_the_imported_file(current: str, imported: str) -> None:
    plan = plan_import(current.encode(), imported.encode(), "replace")
    assert plan.data == imported.encode()
    assert plan.current_entries == len(split_entries(current))


def test_append_over_the_limit_is_refused_in_utf8_bytes() -> None:
    current = b"- \xe6\x97\xa7\n"  # "- 旧\n", 6 bytes
    room = MEMORY_FILE_MAX_BYTES - len(current) - len(b"- \n")
    body = "茶" * (room // 3) + "x" * (room % 3)
    fits = plan_import(current, f"- {body}\n".encode(), "append")
    assert len(fits.data) == MEMORY_FILE_MAX_BYTES
    with pytest.raises(FileTooLarge, match="nothing was written"):
        plan_import(current, f"- {body}y\n".encode(), "append")


@pytest.mark.parametrize("mode", ["merge", "", None, "APPEND", 1])
def test_an_unknown_mode_is_refused(mode: object) -> None:
    with pytest.raises(InvalidArgument, match="mode must be"):
        check_import_mode(mode)
