"""Deterministic findings about MEMORY.md for its owner (no model involved; never prompt input).

:func:`lint_memory` looks at the entries of :mod:`yuxi.services.memory._entries` and reports
things the owner may want to tidy, one finding per code and entry:

* ``duplicate`` / ``near_duplicate`` — an entry that repeats an earlier one, exactly (after
  folding) or nearly; reported on the later entry, naming the earlier
  (:mod:`yuxi.services.memory._lint_similarity`);
* ``secret_like`` / ``injection_like`` — a credential the agent must never keep, or text that
  talks to the agent instead of stating a fact (:mod:`yuxi.services.memory._lint_patterns`);
* ``outside_prompt_window`` — text the agent cannot see;
* ``oversized_entry`` — an entry larger than one memory write.

Each finding names its code (:data:`~yuxi.vocabulary.MEMORY_LINT_CODES`) and the entry.
Findings come in entry order, and for one entry in the order of the vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from yuxi.limits import MEMORY_ENTRY_MAX_BYTES, MEMORY_PROMPT_MAX_BYTES
from yuxi.services.memory._entries import MemoryEntry
from yuxi.services.memory._lint_patterns import injection_kinds, secret_kinds
from yuxi.services.memory._lint_similarity import duplicate_key, near_duplicates, similarity_key
from yuxi.vocabulary import MEMORY_LINT_CODES

__all__ = ["LintFinding", "lint_memory"]

_CODE_ORDER = {code: rank for rank, code in enumerate(MEMORY_LINT_CODES)}


@dataclass(frozen=True, slots=True)
class LintFinding:
    code: str
    entry_index: int
    message: str


def _listing(kinds: Sequence[str]) -> str:
    return kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " and " + kinds[-1]


def _where(entry: MemoryEntry) -> str:
    return f"entry {entry.index} (line {entry.start_line})"


def _repetitions(entries: Sequence[MemoryEntry]) -> list[LintFinding]:
    findings: list[LintFinding] = []
    first_with_key: dict[str, MemoryEntry] = {}
    near_keys: list[str] = []
    for entry in entries:
        key = duplicate_key(entry.text)
        earlier = first_with_key.get(key) if key else None
        if earlier is not None:
            findings.append(
                LintFinding(
                    "duplicate",
                    entry.index,
                    f"repeats {_where(earlier)}: the same text once case, width and spacing "
                    "are ignored; one of them can go",
                )
            )
            near_keys.append("")  # a duplicate is not also a near duplicate of anything
            continue
        if key:
            first_with_key[key] = entry
        near_keys.append(similarity_key(key))
    for later, earlier_position in near_duplicates(near_keys).items():
        findings.append(
            LintFinding(
                "near_duplicate",
                entries[later].index,
                f"nearly repeats {_where(entries[earlier_position])}; keep the one that is "
                "right, or merge them",
            )
        )
    return findings


def _content(entry: MemoryEntry) -> list[LintFinding]:
    findings: list[LintFinding] = []
    secrets = secret_kinds(entry.text)
    if secrets:
        findings.append(
            LintFinding(
                "secret_like",
                entry.index,
                f"looks like it holds {_listing(secrets)}; memory goes into every prompt of "
                "the agent, so credentials and card numbers do not belong here",
            )
        )
    injections = injection_kinds(entry.text)
    if injections:
        findings.append(
            LintFinding(
                "injection_like",
                entry.index,
                f"contains {_listing(injections)}; the agent treats memory as data, never as "
                "instructions — check that you wrote this entry yourself",
            )
        )
    return findings


def _size(entry: MemoryEntry) -> list[LintFinding]:
    findings: list[LintFinding] = []
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


def lint_memory(entries: Sequence[MemoryEntry]) -> list[LintFinding]:
    """Every finding, in entry order (several codes may name the same entry)."""
    findings = _repetitions(entries)
    for entry in entries:
        findings.extend(_content(entry))
        findings.extend(_size(entry))
    return sorted(findings, key=lambda f: (f.entry_index, _CODE_ORDER[f.code]))
