"""The pure rules of the memory history: which version an entry comes from, and diffs."""

from __future__ import annotations

from yuxi.db.models import MemoryVersion
from yuxi.services.memory import entry_sources, split_entries, unified_diff


def _versions(*contents: str) -> list[MemoryVersion]:
    """Versions with these contents, oldest first; returned newest first."""
    rows = [MemoryVersion(version_id=f"v{i}", content=text) for i, text in enumerate(contents)]
    return list(reversed(rows))


def _sources(current: str, *contents: str) -> list[str | None]:
    found = entry_sources(split_entries(current), _versions(*contents))
    return [None if v is None else v.version_id for v in found]


def test_each_entry_comes_from_the_version_that_last_introduced_or_changed_it() -> None:
    history = ("- a\n", "- a\n- b\n", "- a\n- b2\n", "- a\n- b2\n- c\n")
    assert _sources("- a\n- b2\n- c\n", *history) == ["v0", "v2", "v3"]


def test_an_entry_removed_and_added_again_comes_from_the_re_adding_version() -> None:
    history = ("- a\n- x\n", "- a\n", "- a\n- x\n")
    assert _sources("- a\n- x\n", *history) == ["v0", "v2"]


def test_an_entry_in_every_retained_version_comes_from_the_oldest_one() -> None:
    assert _sources("- kept\n", "- kept\n- other\n", "- kept\n") == ["v0"]


def test_an_entry_no_version_has_has_no_source() -> None:
    assert _sources("- written outside\n", "- a\n") == [None]
    assert _sources("- a\n") == [None]  # no versions at all


def test_unified_diff_marks_removed_and_added_lines() -> None:
    diff = unified_diff("keep\nold", "keep\nnew\n", before_label="a", after_label="b")
    assert diff.startswith("--- a\n+++ b\n")
    assert "-old\n" in diff and "+new\n" in diff and " keep\n" in diff
    assert diff.endswith("\n")
    assert unified_diff("same\n", "same\n", before_label="a", after_label="b") == ""
