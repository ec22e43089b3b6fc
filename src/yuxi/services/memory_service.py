"""User-level long-term memory: the read side, the one write tool, user edits.

Owner of ``load_memory_prompt`` and ``remember_memory`` (DESIGN.md §2); the history tools are
:mod:`yuxi.services.lookback_service`, the user-edit half is :mod:`yuxi.services._memory_edits`
and the pure text rules are :mod:`yuxi.services._memory_text`.

``remember_memory`` returns a typed :class:`MemoryWriteResult` or raises a
:class:`~yuxi.errors.YuxiError` (the tool adapter tells the model; the run goes on). Every refusal
leaves the file untouched. Storage failures are :class:`~yuxi.errors.StorageUnavailable` — except
when the publish already happened and only ending the transaction failed: the file did change,
so the result says so (``updated``), truthfully.

Every MEMORY.md writer holds, in this order, the per-uid PostgreSQL advisory lock (the authority
across workers, held until the unit of work ends) and the per-uid file lock (see
:mod:`yuxi.services._memory_lock`), and publishes by atomic replace.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from sqlalchemy.exc import SQLAlchemyError

from yuxi.errors import (
    MemoryDisabled,
    MemoryTooLarge,
    StorageUnavailable,
    UnauthorizedRun,
    WorkspaceError,
    WorkspaceFileNotFound,
)
from yuxi.identity import RunIdentity
from yuxi.limits import (
    MEMORY_CONTENT_MAX_BYTES,
    MEMORY_FILE_MAX_BYTES,
    MEMORY_PROMPT_MAX_BYTES,
    MEMORY_REPLACES_MAX_BYTES,
)
from yuxi.services._memory_edits import UserMemoryEdits
from yuxi.services._memory_lock import memory_file_lock
from yuxi.services._memory_text import (
    PROMPT_TRUNCATION_NOTE,
    MemorySnapshot,
    apply_add,
    apply_replace,
    decode_memory_file,
    encode_result,
    snapshot_of,
)
from yuxi.services.unit_of_work import UnitOfWorkFactory
from yuxi.utils.string_utils import check_text
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace

__all__ = [
    "MEMORY_DISPLAY_PATH",
    "PROMPT_TRUNCATION_NOTE",
    "MemoryService",
    "MemorySnapshot",
    "MemoryWriteResult",
]

_log = logging.getLogger(__name__)

MEMORY_DISPLAY_PATH = "/" + MEMORY_PATH

#: Storage failures of a write: the database, the file system, the lock.
_STORAGE_ERRORS = (SQLAlchemyError, OSError, WorkspaceError, TimeoutError)


@dataclass(frozen=True)
class MemoryWriteResult:
    """What one ``remember_memory`` did to MEMORY.md (1-based inclusive line span)."""

    status: Literal["updated", "unchanged"]
    path: str
    size: int
    start_line: int
    end_line: int

    def to_payload(self) -> dict[str, Any]:
        return asdict(self)


class MemoryService:
    def __init__(
        self,
        uow: UnitOfWorkFactory,
        workspace_root: Path,
        workspace_factory: Callable[[str], Workspace] | None = None,
    ) -> None:
        self._uow = uow
        self._root = workspace_root
        self._workspace = workspace_factory or (lambda uid: Workspace(workspace_root, uid))
        self._edits = UserMemoryEdits(uow, workspace_root, self._workspace)

    # -- read side ----------------------------------------------------------------------------

    async def memory_enabled(self, uid: str) -> bool:
        async with self._uow() as uow:
            return await uow.users.memory_enabled(uid)

    async def load_memory_snapshot(self, uid: str) -> MemorySnapshot | None:
        """``None`` when the switch is off — and then MEMORY.md is not even opened."""
        if not await self.memory_enabled(uid):
            return None
        return await self.read_memory_snapshot(uid)

    async def read_memory_snapshot(self, uid: str) -> MemorySnapshot:
        """The ≤ 24 KiB memory text (no switch check: callers have made it)."""
        try:
            data, truncated = await self._workspace(uid).read_authorized_file_prefix(
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
        self, identity: RunIdentity, content: object, replaces: object = None
    ) -> MemoryWriteResult:
        """Add ``content`` (deduplicated by whole lines) or replace the one exact ``replaces``.

        Only a lease-holding identity may write; the run row decides under ``FOR UPDATE``.
        """
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
            return await self._locked_remember(identity, text, old, published)
        except _STORAGE_ERRORS as exc:
            _log.warning("remember_memory for %s failed: %r", identity.uid, exc)
            if published:
                # The publish happened under both locks; only ending the (read-only)
                # transaction failed. The file did change: say so, truthfully.
                return published[0]
            raise StorageUnavailable(
                "memory storage is unavailable right now; nothing was changed. Try again later."
            ) from None

    async def _locked_remember(
        self,
        identity: RunIdentity,
        content: str,
        replaces: str | None,
        published: list[MemoryWriteResult],
    ) -> MemoryWriteResult:
        workspace = self._workspace(identity.uid)
        async with self._uow() as uow:
            auth = await uow.runs.lock_memory_write(identity)
            if not auth.ok:
                raise UnauthorizedRun(f"this run may not write memory: {auth.reason}")
            # Re-read the switch under the lock: turning memory off mid-run wins.
            if not await uow.users.memory_enabled(identity.uid):
                raise MemoryDisabled("memory is turned off for this user")
            async with memory_file_lock(self._root, workspace.directory.name):
                base = await _read_current(workspace)
                edit = (
                    apply_add(base, content)
                    if replaces is None
                    else apply_replace(base, replaces, content)
                )
                data = encode_result(edit.text) if edit.changed else edit.text.encode("utf-8")
                result = MemoryWriteResult(
                    status="updated" if edit.changed else "unchanged",
                    path=MEMORY_DISPLAY_PATH,
                    size=len(data),
                    start_line=edit.start_line,
                    end_line=edit.end_line,
                )
                if edit.changed:
                    await workspace.replace_authorized_file(MEMORY_PATH, data)
                    published.append(result)
            # Read-only transaction: leaving the block rolls back and releases the locks.
        return result

    # -- user edits (file API, UI, generic file tools) ----------------------------------------

    async def read_memory_file(self, uid: str) -> tuple[bytes, str]:
        """Current bytes and strong ETag of MEMORY.md (missing reads as empty)."""
        return await self._edits.read(uid)

    async def write_memory_file(self, uid: str, data: bytes, *, if_match: str | None = None) -> str:
        """Replace MEMORY.md with a user's edit under the same locks and publish as the tool.

        ``if_match`` (an ETag from :meth:`read_memory_file`; ``*`` matches anything) makes a
        stale edit fail with :class:`~yuxi.errors.PreconditionFailed` instead of overwriting
        newer memory. Returns the new ETag. Raises :class:`~yuxi.errors.InvalidArgument` for
        non-UTF-8, NUL or oversize data.
        """
        return await self._edits.write(uid, data, if_match=if_match)

    async def delete_memory_file(self, uid: str, *, if_match: str | None = None) -> None:
        """Delete MEMORY.md under the same locks (a later remember_memory re-creates it)."""
        await self._edits.delete(uid, if_match=if_match)


async def _read_current(workspace: Workspace) -> str:
    try:
        data, truncated = await workspace.read_authorized_file_prefix(
            MEMORY_PATH, MEMORY_FILE_MAX_BYTES
        )
    except WorkspaceFileNotFound:
        return ""
    if truncated:
        raise MemoryTooLarge(
            f"MEMORY.md is larger than {MEMORY_FILE_MAX_BYTES} bytes; ask the user to tidy it "
            "in the workspace file editor"
        )
    return decode_memory_file(data)
