"""Every exception Yuxi raises on purpose, in one tree.

Three audiences, three kinds of error (kept apart on purpose):

* **tell the developer** — :class:`ConfigurationError`, raised at start-up when settings or the
  environment cannot work (bad database URL, data dir under a home directory, ...);
* **tell the user** — :class:`YuxiError` subclasses carry a stable ``code``; the HTTP layer maps
  them to status codes in one place (``yuxi.api.errors``);
* **tell the model** — services raise the same errors to the agent's tools, and one adapter
  (``yuxi.agents.tools.tool_result``) turns any :class:`YuxiError` into an error ``ToolMessage``
  (``status="error"``, content ``{"status": "error", "code", "error"}``). The run goes on and the
  model is told. :class:`ToolError` is the branch of codes only a model ever sees.

::

    YuxiError (code)
    ├── ConfigurationError                 configuration_error
    ├── InvalidArgument                    invalid_argument
    │   ├── InvalidImport                  invalid_import        (a memory import that is not
    │   │                                                         UTF-8 text without NUL, or
    │   │                                                         JSON that does not parse)
    │   ├── UnsupportedImportFormat        unsupported_import_format (JSON that is not a
    │   │                                                         memory export this server
    │   │                                                         reads: format or version)
    │   ├── UnsupportedMediaType           unsupported_media_type (a body type not accepted)
    │   └── ArchiveInvalid                 archive_invalid       (a damaged backup archive)
    │       └── ArchiveUnsupported         archive_unsupported   (a newer format or schema)
    ├── NotFound                           not_found
    ├── Conflict                           conflict
    │   ├── PreconditionFailed             precondition_failed   (stale ETag / If-Match)
    │   ├── ActiveRunExists                active_run_exists
    │   ├── RestoreTargetNotEmpty          restore_target_not_empty (yuxi restore, no --force)
    │   └── MemoryConflict                 memory_conflict       (`replaces` found 0 or ≥ 2
    │                                                             times; an undo after a later
    │                                                             change — told to the model
    │                                                             and to the user alike)
    ├── PreconditionRequired               precondition_required (HTTP: If-Match is required)
    ├── Unauthorized                       unauthorized          (HTTP: no or a bad token)
    ├── WorkspaceError                     workspace_error
    │   ├── UnsafePath                     unsafe_path           (.., absolute, NUL, backslash)
    │   ├── SymlinkRefused                 symlink_refused       (a symlink on the path)
    │   ├── NotARegularFile                not_regular_file
    │   ├── WorkspaceFileNotFound          file_not_found
    │   └── FileTooLarge                   file_too_large
    ├── StorageUnavailable                 storage_unavailable   (database / lock failure)
    ├── StorageFull                        storage_full          (the data dir's filesystem is
    │                                                             full: ENOSPC, EDQUOT)
    ├── StorageReadOnly                    storage_read_only     (the data dir takes no writes:
    │                                                             EROFS, EACCES)
    ├── BackupFailed                       backup_failed         (yuxi backup / restore)
    │   └── BackupToolMissing              backup_tool_missing   (no usable pg_dump/pg_restore)
    ├── ModelOutputTruncated               model_output_truncated (a run's end: the model kept
    │                                                             sending cut-off tool calls)
    └── ToolError                          tool_error            (tell the model only)
        ├── UnauthorizedRun                unauthorized_run      (no trusted, live run identity)
        ├── MemoryDisabled                 memory_disabled       (the user's switch is off)
        ├── MemoryTooLarge                 memory_too_large      (MEMORY.md would pass 128 KiB)
        ├── MemoryQuotaExceeded            memory_quota_exceeded (the run's write quota is used)
        ├── MemoryReadOnly                 memory_read_only      (an evaluation run: read only)
        ├── MemoryInvalidEncoding          memory_invalid_encoding
        ├── MemoryWriteRejected            memory_write_rejected (the user rejected the write
        │                                                         at its approval: nothing saved)
        ├── ForbiddenPath                  forbidden_path        (MEMORY.md without memory)
        ├── NotText                        not_text              (a file that is not UTF-8)
        ├── EditConflict                   edit_conflict         (`old` found 0 or ≥ 2 times)
        └── SubagentFailed                 subagent_failed
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class YuxiError(Exception):
    """Base of every deliberate Yuxi error. ``code`` is stable and machine-readable.

    ``details`` are extra JSON-able fields for whoever is told (e.g. the ``diff`` of a refused
    undo); they never repeat ``code`` or ``message``.
    """

    code: str = "error"

    def __init__(self, message: str, *, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})


class ConfigurationError(YuxiError):
    code = "configuration_error"


class InvalidArgument(YuxiError):
    code = "invalid_argument"


class InvalidImport(InvalidArgument):
    """A memory import that is not a memory file (invalid UTF-8, a NUL byte) or not JSON."""

    code = "invalid_import"


class UnsupportedImportFormat(InvalidArgument):
    """JSON that is not a memory export document of a format and version this server reads."""

    code = "unsupported_import_format"


class UnsupportedMediaType(InvalidArgument):
    code = "unsupported_media_type"


class NotFound(YuxiError):
    code = "not_found"


class Conflict(YuxiError):
    code = "conflict"


class PreconditionFailed(Conflict):
    code = "precondition_failed"


class ActiveRunExists(Conflict):
    code = "active_run_exists"


class AlreadyDecided(Conflict):
    """A decision on an interruption that already has the other one: one decision per
    interruption, and the answer says which and by which run (``details``)."""

    code = "already_decided"


class PreconditionRequired(YuxiError):
    """A change that must name the version it replaces (``If-Match``) came without one."""

    code = "precondition_required"


class Unauthorized(YuxiError):
    code = "unauthorized"


class WorkspaceError(YuxiError):
    code = "workspace_error"


class UnsafePath(WorkspaceError):
    code = "unsafe_path"


class SymlinkRefused(WorkspaceError):
    code = "symlink_refused"


class NotARegularFile(WorkspaceError):
    code = "not_regular_file"


class WorkspaceFileNotFound(WorkspaceError):
    code = "file_not_found"


class FileTooLarge(WorkspaceError):
    code = "file_too_large"


class StorageUnavailable(YuxiError):
    code = "storage_unavailable"


class StorageFull(YuxiError):
    """The filesystem holding the data dir has no room (or the quota is used): a write was
    refused whole — the old file is intact, no temp is left, no memory version is recorded.
    Reads go on; the same write succeeds once space returns (design.md §5.6a)."""

    code = "storage_full"


class StorageReadOnly(YuxiError):
    """The data dir does not take writes (a read-only mount, or not writable by the server's
    user): refused whole like :class:`StorageFull`; the fix is the mount, not the space."""

    code = "storage_read_only"


class BackupFailed(YuxiError):
    """``yuxi backup`` or ``yuxi restore`` could not finish (a client tool failed, the database
    changed under it); a backup leaves no archive, a restore says what it had done."""

    code = "backup_failed"


class BackupToolMissing(BackupFailed):
    """No ``pg_dump`` / ``pg_restore`` able to talk to this server (the message says what to
    install)."""

    code = "backup_tool_missing"


class ArchiveInvalid(InvalidArgument):
    """A backup archive that is damaged or truncated: refused before anything is written."""

    code = "archive_invalid"


class ArchiveUnsupported(ArchiveInvalid):
    """A backup archive of a newer format or a newer schema than this code knows."""

    code = "archive_unsupported"


class RestoreTargetNotEmpty(Conflict):
    """``yuxi restore`` into a database or data dir that holds data (``--force`` replaces it)."""

    code = "restore_target_not_empty"


class ModelOutputTruncated(YuxiError):
    code = "model_output_truncated"


class ToolError(YuxiError):
    """A refusal only a model sees (as an error tool result); never an HTTP response."""

    code = "tool_error"


class UnauthorizedRun(ToolError):
    code = "unauthorized_run"


class MemoryDisabled(ToolError):
    code = "memory_disabled"


class MemoryConflict(Conflict):
    code = "memory_conflict"


class MemoryTooLarge(ToolError):
    code = "memory_too_large"


class MemoryQuotaExceeded(ToolError):
    code = "memory_quota_exceeded"


class MemoryReadOnly(ToolError):
    code = "memory_read_only"


class MemoryInvalidEncoding(ToolError):
    code = "memory_invalid_encoding"


class MemoryWriteRejected(ToolError):
    """The user rejected a ``remember_memory`` call put to them for approval; nothing was saved."""

    code = "memory_write_rejected"


class ForbiddenPath(ToolError):
    code = "forbidden_path"


class NotText(ToolError):
    code = "not_text"


class EditConflict(ToolError):
    code = "edit_conflict"


class SubagentFailed(ToolError):
    code = "subagent_failed"
