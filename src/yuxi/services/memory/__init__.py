"""User memory: the one MEMORY.md per user, its versions, provenance and lint (design.md §3-§5).

Public surface:

* the services: :class:`MemoryService` (read, the agent's ``remember_memory``, the user's edits)
  and :class:`MemoryVersionService` (versions, diffs, restore and undo);
* what they return, and the views the API serialises (:mod:`.views`);
* the pure text rules the services apply, for tests and tools that check them on their own
  input: entries, edits, lint, provenance and diffs, what an import makes of the file
  (:func:`plan_import`); :func:`held_secret_kinds` (the lint's
  :func:`secret_kinds` less its one statistical guess) is also the one definition of a
  secret-shaped memory write (the approval rule in :mod:`yuxi.agents.middlewares.taint`).

Everything else (the write lock and publish, version recording, retention) is private.
"""

from yuxi.services.memory._entries import MemoryEntry, split_entries
from yuxi.services.memory._forget import (
    ThreadForgetView,
    ThreadMemory,
    ThreadMemoryView,
    remove_entries,
)
from yuxi.services.memory._import_modes import ImportPlan, check_import_mode, plan_import
from yuxi.services.memory._lint import LintFinding, lint_memory
from yuxi.services.memory._lint_patterns import (
    RANDOM_KEY_KIND,
    held_secret_kinds,
    injection_kinds,
    luhn_valid,
    secret_kinds,
)
from yuxi.services.memory._lint_similarity import NEAR_DUPLICATE_JACCARD, bigrams, near_duplicates
from yuxi.services.memory._provenance import entry_sources, unified_diff
from yuxi.services.memory._text import (
    apply_add,
    apply_replace,
    decode_memory_file,
    encode_result,
    find_whole_lines,
    snapshot_of,
)
from yuxi.services.memory._transfer import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    IMPORT_MEDIA_TYPES,
    ImportEntryView,
    MemoryExport,
    MemoryImportPreview,
    MemoryImportResult,
    encode_export,
    parse_import,
)
from yuxi.services.memory._versions import EMPTY_SHA256, CurrentFile
from yuxi.services.memory._writer import LockedMemory, replace_memory_file
from yuxi.services.memory.service import (
    MEMORY_DISPLAY_PATH,
    PROMPT_TRUNCATION_NOTE,
    MemoryService,
    MemorySnapshot,
    MemoryWriteResult,
    QuotaRemaining,
)
from yuxi.services.memory.version_service import MemoryVersionService

__all__ = [
    "EMPTY_SHA256",
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "IMPORT_MEDIA_TYPES",
    "MEMORY_DISPLAY_PATH",
    "NEAR_DUPLICATE_JACCARD",
    "PROMPT_TRUNCATION_NOTE",
    "RANDOM_KEY_KIND",
    "CurrentFile",
    "ImportEntryView",
    "ImportPlan",
    "LintFinding",
    "LockedMemory",
    "MemoryEntry",
    "MemoryExport",
    "MemoryImportPreview",
    "MemoryImportResult",
    "MemoryService",
    "MemorySnapshot",
    "MemoryVersionService",
    "MemoryWriteResult",
    "QuotaRemaining",
    "ThreadForgetView",
    "ThreadMemory",
    "ThreadMemoryView",
    "apply_add",
    "apply_replace",
    "bigrams",
    "check_import_mode",
    "decode_memory_file",
    "encode_export",
    "encode_result",
    "entry_sources",
    "find_whole_lines",
    "held_secret_kinds",
    "injection_kinds",
    "lint_memory",
    "luhn_valid",
    "near_duplicates",
    "parse_import",
    "plan_import",
    "remove_entries",
    "replace_memory_file",
    "secret_kinds",
    "snapshot_of",
    "split_entries",
    "unified_diff",
]
