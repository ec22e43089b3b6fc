"""Pure rules of the memory history: where an entry came from, and diffs (no I/O)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from yuxi.db.models import MemoryVersion
from yuxi.services.memory._entries import MemoryEntry, split_entries

__all__ = ["entry_sources", "unified_diff"]


def entry_sources(
    entries: Sequence[MemoryEntry], newest_first: Sequence[MemoryVersion]
) -> list[MemoryVersion | None]:
    """For each entry, the version that last introduced or changed its text.

    Walking the retained versions newest → oldest, that is the newest version whose content
    has the entry (as an entry of :func:`split_entries`) while the version before it does not;
    an entry present in every retained version comes from the oldest one. ``None`` when no
    retained version has it (the file changed outside Yuxi since the last write, or there are
    no versions yet).
    """
    texts = [{entry.text for entry in split_entries(v.content)} for v in newest_first]
    sources: list[MemoryVersion | None] = []
    for entry in entries:
        found: MemoryVersion | None = None
        for i, version in enumerate(newest_first):
            if entry.text in texts[i] and (i + 1 == len(texts) or entry.text not in texts[i + 1]):
                found = version
                break
        sources.append(found)
    return sources


def unified_diff(before: str, after: str, *, before_label: str, after_label: str) -> str:
    """A unified diff of two versions of MEMORY.md ("" when they are equal)."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=before_label,
        tofile=after_label,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
