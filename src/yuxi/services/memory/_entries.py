"""MEMORY.md as its owner sees it: a list of entries (pure; no I/O).

An *entry* is a block of lines separated from the next by a blank line — or, inside a block, one
Markdown list item (``-``, ``*``, ``+`` or ``1.``/``1)`` with up to three spaces of indent) with
the lines that continue it. Lines of a block before its first list item (a heading, a sentence)
form an entry of their own. The file itself stays the single source of truth: entries are a
view, computed on each read, and an edit of one entry is an edit of the file.

``in_prompt_window`` is true when the whole entry lies within the first
:data:`~yuxi.limits.MEMORY_PROMPT_MAX_BYTES` bytes of the file — the part a run injects. An entry
the cut passes through is *not* in the window: the agent sees only its beginning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from yuxi.limits import MEMORY_PROMPT_MAX_BYTES

__all__ = ["MemoryEntry", "split_entries", "strip_list_marker"]

_LIST_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:\s|$)")


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """One entry; lines are 1-based and inclusive, ``start_byte`` and ``bytes`` are UTF-8."""

    index: int
    text: str
    start_line: int
    end_line: int
    start_byte: int
    bytes: int
    in_prompt_window: bool


def split_entries(text: str, *, window_bytes: int = MEMORY_PROMPT_MAX_BYTES) -> list[MemoryEntry]:
    """The entries of ``text`` in file order (empty or blank text has none)."""
    groups: list[list[tuple[int, int, str]]] = []  # (line number, start byte, line text)
    current: list[tuple[int, int, str]] = []
    offset = 0
    for number, raw in enumerate(text.splitlines(keepends=True), start=1):
        line = raw.rstrip("\r\n")
        start = offset
        offset += len(raw.encode("utf-8"))
        if not line.strip():
            if current:
                groups.append(current)
                current = []
            continue
        if current and _LIST_ITEM.match(line):
            groups.append(current)
            current = []
        current.append((number, start, line))
    if current:
        groups.append(current)

    entries: list[MemoryEntry] = []
    for index, group in enumerate(groups):
        body = "\n".join(line for _, _, line in group)
        size = len(body.encode("utf-8"))
        start_byte = group[0][1]
        entries.append(
            MemoryEntry(
                index=index,
                text=body,
                start_line=group[0][0],
                end_line=group[-1][0],
                start_byte=start_byte,
                bytes=size,
                in_prompt_window=start_byte + size <= window_bytes,
            )
        )
    return entries


def strip_list_marker(text: str) -> str:
    """``text`` without the list-item marker that may start it (``- a`` and ``1. a`` → ``a``)."""
    return _LIST_ITEM.sub("", text, count=1)
