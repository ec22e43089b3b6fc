"""Deterministic findings about MEMORY.md for its owner (no model involved; never prompt input).

:func:`lint_memory` looks at the entries of :mod:`yuxi.services._memory_entries` and reports
things the owner may want to tidy: text the agent cannot see, entries larger than one write.
Each finding names its code (:data:`~yuxi.vocabulary.MEMORY_LINT_CODES`) and the entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from yuxi.limits import MEMORY_ENTRY_MAX_BYTES, MEMORY_PROMPT_MAX_BYTES
from yuxi.services._memory_entries import MemoryEntry

__all__ = ["LintFinding", "lint_memory"]


@dataclass(frozen=True, slots=True)
class LintFinding:
    code: str
    entry_index: int
    message: str


def lint_memory(entries: Sequence[MemoryEntry]) -> list[LintFinding]:
    """Every finding, in entry order (several codes may name the same entry)."""
    findings: list[LintFinding] = []
    for entry in entries:
        if not entry.in_prompt_window:
            findings.append(
                LintFinding(
                    "outside_prompt_window",
                    entry.index,
                    f"the agent sees only the first {MEMORY_PROMPT_MAX_BYTES // 1024} KiB of "
                    "memory; this entry is (partly) beyond it",
                )
            )
        if entry.bytes > MEMORY_ENTRY_MAX_BYTES:
            findings.append(
                LintFinding(
                    "oversized_entry",
                    entry.index,
                    f"this entry is {entry.bytes} bytes, more than one memory write "
                    f"({MEMORY_ENTRY_MAX_BYTES} bytes); consider splitting or shortening it",
                )
            )
    return findings
