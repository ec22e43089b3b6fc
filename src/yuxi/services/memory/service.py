"""User-level long-term memory: the read side, the one write tool, user edits.

Owner of ``load_memory_prompt`` and ``remember_memory`` (docs/design.md §2); the history tools are
:mod:`yuxi.services.lookback.service`, the whole-file writes (the owner's, and an agent's generic
file tools) are :mod:`yuxi.services.memory._edits`, the pure text rules are
:mod:`yuxi.services.memory._text`, and the versions every write records are
:mod:`yuxi.services.memory._versions` (read back by
:mod:`yuxi.services.memory.version_service`).

``remember_memory`` returns a typed :class:`MemoryWriteResult` or raises a
:class:`~yuxi.errors.YuxiError` (the tool adapter tells the model; the run goes on). Every refusal
leaves the file untouched. A full or read-only data dir is :class:`~yuxi.errors.StorageFull` /
:class:`~yuxi.errors.StorageReadOnly` (no version recorded). Other storage failures are
:class:`~yuxi.errors.StorageUnavailable` — except when the publish already happened and only
ending the transaction failed: the file did change, so the result says so (``updated``),
truthfully.

Every MEMORY.md writer goes through :mod:`yuxi.services.memory._writer`: it holds, in this order,
the per-uid PostgreSQL advisory lock (the authority across workers, held until the unit of work
ends) and the per-uid workspace lock (:meth:`Workspace.locked`), records the version,
publishes by atomic replace and commits.

Each run may make at most ``writes_per_run`` memory writes adding at most ``bytes_per_run`` UTF-8
bytes (the stripped ``content`` of each write that changed the file), counted on the run row
under the same lock; an ``unchanged`` result costs nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from sqlalchemy.exc import SQLAlchemyError

from yuxi.errors import (
    MemoryQuotaExceeded,
    MemoryTooLarge,
    StorageUnavailable,
    UnauthorizedRun,
    WorkspaceError,
    WorkspaceFileNotFound,
    YuxiError,
)
from yuxi.identity import RunIdentity
from yuxi.limits import (
    MEMORY_BYTES_PER_RUN,
    MEMORY_CONTENT_MAX_BYTES,
    MEMORY_FILE_MAX_BYTES,
    MEMORY_PROMPT_MAX_BYTES,
    MEMORY_REPLACES_MAX_BYTES,
    MEMORY_WRITES_PER_RUN,
)
from yuxi.observability.metrics import Metrics
from yuxi.services.memory._edits import MemoryFileEdits
from yuxi.services.memory._text import (
    PROMPT_TRUNCATION_NOTE,
    MemorySnapshot,
    apply_add,
    apply_replace,
    decode_memory_file,
    encode_result,
    snapshot_of,
)
from yuxi.services.memory._versions import Quota
from yuxi.services.memory._writer import LockedMemory, MemoryWriteAccess
from yuxi.services.unit_of_work import UnitOfWorkFactory
from yuxi.utils.string_utils import check_text
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace

__all__ = [
    "MEMORY_DISPLAY_PATH",
    "PROMPT_TRUNCATION_NOTE",
    "MemoryService",
    "MemorySnapshot",
    "MemoryWriteResult",
    "QuotaRemaining",
]

_log = logging.getLogger(__name__)

MEMORY_DISPLAY_PATH = "/" + MEMORY_PATH

#: Storage failures of a write: the database, the file system, the lock.
_STORAGE_ERRORS = (SQLAlchemyError, OSError, WorkspaceError, TimeoutError)


@dataclass(frozen=True)
class QuotaRemaining:
    """What the run may still write: memory writes, and UTF-8 bytes of added text."""

    writes: int
    bytes: int

    def to_payload(self) -> dict[str, int]:
        return {"writes": self.writes, "bytes": self.bytes}


@dataclass(frozen=True)
class MemoryWriteResult:
    """What one ``remember_memory`` did to MEMORY.md (1-based inclusive line span), the run's
    quota left afterwards and, when it changed the file, the version it recorded."""

    status: Literal["updated", "unchanged"]
    path: str
    size: int
    start_line: int
    end_line: int
    quota_remaining: QuotaRemaining | None = None
    version_id: str | None = None

    def to_payload(self) -> dict[str, Any]:
        # Spelled out: dataclasses.asdict deep-copies field by field, on every write.
        payload: dict[str, Any] = {
            "status": self.status,
            "path": self.path,
            "size": self.size,
            "start_line": self.start_line,
            "end_line": self.end_line,
        }
        if self.quota_remaining is not None:
            payload["quota_remaining"] = self.quota_remaining.to_payload()
        if self.version_id is not None:
            payload["version_id"] = self.version_id
        return payload


class MemoryService:
    def __init__(
        self,
        uow: UnitOfWorkFactory,
        workspace_root: Path,
        workspace_factory: Callable[[str], Workspace] | None = None,
        *,
        writes_per_run: int = MEMORY_WRITES_PER_RUN,
        bytes_per_run: int = MEMORY_BYTES_PER_RUN,
        metrics: Metrics | None = None,
    ) -> None:
        self._uow = uow
        self._metrics = metrics or Metrics()
        self._workspace = workspace_factory or (lambda uid: Workspace(workspace_root, uid))
        self._lock = MemoryWriteAccess(uow, self._workspace)
        self._edits = MemoryFileEdits(uow, self._workspace)
        self._writes_per_run = writes_per_run
        self._bytes_per_run = bytes_per_run

    # -- read side ----------------------------------------------------------------------------

    async def memory_enabled(self, uid: str) -> bool:
        async with self._uow.one_statement() as uow:
            return await uow.users.memory_enabled(uid)

    async def load_memory_snapshot(self, uid: str) -> MemorySnapshot | None:
        """``None`` when the switch is off — and then MEMORY.md is not even opened."""
        if not await self.memory_enabled(uid):
            return None
        return await self.read_memory_snapshot(uid)

    async def read_memory_snapshot(self, uid: str) -> MemorySnapshot:
        """The ≤ 24 KiB memory text (no switch check: callers have made it)."""
        try:
            data, truncated = await self._workspace(uid).read_file_prefix(
                MEMORY_PATH, MEMORY_PROMPT_MAX_BYTES
            )
        except WorkspaceFileNotFound:
            data, truncated = b"", False
        except WorkspaceError as exc:
            _log.warning("memory of %s not readable: %s", uid, exc)
            data, truncated = b"", False
        snapshot = snapshot_of(data, truncated)
        if not snapshot.text and data.strip():
            _log.warning("memory of %s is not valid UTF-8; not injected", uid)
        return snapshot

    async def load_memory_prompt(self, uid: str) -> str | None:
        snapshot = await self.load_memory_snapshot(uid)
        return None if snapshot is None else snapshot.text

    # -- the write tool -----------------------------------------------------------------------

    async def remember_memory(
        self,
        identity: RunIdentity,
        content: object,
        replaces: object = None,
        *,
        tool_call_id: str | None = None,
    ) -> MemoryWriteResult:
        """Add ``content`` (deduplicated by whole lines) or replace the one exact ``replaces``.

        Only a lease-holding identity may write; the run row decides under ``FOR UPDATE``.
        ``tool_call_id`` (the model's call) is recorded on the version with the run's thread
        and the user message that asked. Counted in ``yuxi_memory_writes`` by result (the
        status, or the refusal's error code).
        """
        try:
            result = await self._remember_memory(identity, content, replaces, tool_call_id)
        except YuxiError as exc:
            self._metrics.memory_write(exc.code)
            raise
        self._metrics.memory_write(result.status)
        return result

    async def _remember_memory(
        self, identity: RunIdentity, content: object, replaces: object, tool_call_id: str | None
    ) -> MemoryWriteResult:
        if not identity.holds_lease:
            raise UnauthorizedRun("this run holds no lease and may not write memory")
        text = check_text("content", content, max_bytes=MEMORY_CONTENT_MAX_BYTES)
        old = (
            None
            if replaces is None
            else check_text("replaces", replaces, max_bytes=MEMORY_REPLACES_MAX_BYTES)
        )
        published: list[MemoryWriteResult] = []
        try:
            waiting = time.perf_counter()
            async with self._lock.for_agent(identity) as locked:
                self._metrics.memory_lock_wait.observe(time.perf_counter() - waiting)
                return await self._remember(locked, text, old, tool_call_id, published)
        except _STORAGE_ERRORS as exc:
            _log.warning("remember_memory for %s failed: %r", identity.uid, exc)
            if published:
                # The publish happened under both locks; only the commit failed. The file did
                # change: say so, truthfully (its version is recorded as `recovered` by the
                # next write, so this result names none).
                return replace(published[0], version_id=None)
            raise StorageUnavailable(
                "memory storage is unavailable right now; nothing was changed. Try again later."
            ) from None

    async def _remember(
        self,
        locked: LockedMemory,
        content: str,
        replaces: str | None,
        tool_call_id: str | None,
        published: list[MemoryWriteResult],
    ) -> MemoryWriteResult:
        if locked.current.truncated:
            raise MemoryTooLarge(
                f"MEMORY.md is larger than {MEMORY_FILE_MAX_BYTES} bytes; ask the user to tidy "
                "it in the workspace file editor"
            )
        base = decode_memory_file(locked.current.data)
        edit = (
            apply_add(base, content) if replaces is None else apply_replace(base, replaces, content)
        )
        assert locked.auth is not None and locked.identity is not None
        writes, used = locked.auth.memory_writes, locked.auth.memory_write_bytes
        if not edit.changed:
            return MemoryWriteResult(
                "unchanged",
                MEMORY_DISPLAY_PATH,
                len(locked.current.data),
                edit.start_line,
                edit.end_line,
                self._remaining(writes, used),
            )
        data = encode_result(edit.text)
        added = len(content.strip().encode("utf-8"))
        if writes + 1 > self._writes_per_run or used + added > self._bytes_per_run:
            raise MemoryQuotaExceeded(
                f"this run may make {self._writes_per_run} memory writes adding at most "
                f"{self._bytes_per_run} bytes; {writes} writes and {used} bytes are used, and "
                f"this one adds {added} bytes. Nothing was written; tell the user.",
                details={"quota_remaining": self._remaining(writes, used).to_payload()},
            )
        version = await locked.publish(
            data,
            actor="agent",
            kind="add" if replaces is None else "replace",
            provenance=await locked.agent_provenance(tool_call_id),
            quota=Quota(locked.identity.run_id, added),
        )
        result = MemoryWriteResult(
            "updated",
            MEMORY_DISPLAY_PATH,
            len(data),
            edit.start_line,
            edit.end_line,
            self._remaining(writes + 1, used + added),
            version.version_id,
        )
        published.append(result)
        return result

    def _remaining(self, writes: int, used_bytes: int) -> QuotaRemaining:
        return QuotaRemaining(
            max(0, self._writes_per_run - writes), max(0, self._bytes_per_run - used_bytes)
        )

    # -- whole-file writes (file API, UI, generic file tools) ---------------------------------

    async def read_memory_file(self, uid: str) -> tuple[bytes, str]:
        """Current bytes and strong ETag of MEMORY.md (missing reads as empty)."""
        return await self._edits.read(uid)

    async def write_memory_file(self, uid: str, data: bytes, *, if_match: str | None = None) -> str:
        """The owner's edit: replace MEMORY.md under the same locks and publish as the tool,
        recorded as a ``user`` / ``edit`` version. Works whether memory is on or off.

        ``if_match`` (an ETag from :meth:`read_memory_file`; ``*`` matches anything) makes a
        stale edit fail with :class:`~yuxi.errors.PreconditionFailed` instead of overwriting
        newer memory. Returns the new ETag. Raises :class:`~yuxi.errors.InvalidArgument` for
        non-UTF-8, NUL or oversize data.
        """
        return await self._edits.user_write(uid, data, if_match=if_match)

    async def delete_memory_file(self, uid: str, *, if_match: str | None = None) -> None:
        """The owner's delete, under the same locks (a later remember_memory re-creates it)."""
        await self._edits.user_delete(uid, if_match=if_match)

    async def agent_write_memory_file(
        self,
        identity: RunIdentity,
        data: bytes,
        *,
        tool_call_id: str | None = None,
        if_match: str | None = None,
    ) -> str:
        """An agent's generic file tool writing MEMORY.md (after the user approved it).

        The same gate as ``remember_memory``: the run must own a live lease and memory must be
        on, both checked under the lock (:class:`~yuxi.errors.UnauthorizedRun`,
        :class:`~yuxi.errors.MemoryDisabled`; the file is then unchanged). Recorded as an
        ``agent`` / ``edit`` version with the run's provenance. Returns the new ETag.
        """
        return await self._edits.agent_write(
            identity, data, tool_call_id=tool_call_id, if_match=if_match
        )
