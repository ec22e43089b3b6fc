"""Whole-file writes of MEMORY.md: the owner's (file API, web UI) and an agent's generic file
tools after approval.

Each is published through :class:`~yuxi.services.memory._writer.MemoryWriteAccess`, under exactly
the locks ``remember_memory`` takes, and recorded as a version (``user`` / ``edit`` or
``delete``; ``agent`` / ``edit`` with the run's provenance). ``If-Match`` turns a stale edit into
:class:`~yuxi.errors.PreconditionFailed` instead of an overwrite. A write that leaves the bytes
as they are records nothing.

An agent's write passes the same gate as ``remember_memory``: the run must own a live lease
(checked under ``FOR UPDATE`` by the database clock) and the switch is read again under the lock.
The owner's own edits never look at the switch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from yuxi.errors import InvalidArgument, PreconditionFailed, WorkspaceFileNotFound
from yuxi.identity import RunIdentity
from yuxi.limits import MEMORY_FILE_MAX_BYTES
from yuxi.services.memory._writer import LockedMemory, MemoryWriteAccess
from yuxi.services.unit_of_work import UnitOfWorkFactory
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace, etag_for, if_match_allows

__all__ = ["MemoryFileEdits"]

_STALE = "MEMORY.md changed since you loaded it; reload and re-apply your edit"


def _check_file(data: bytes) -> None:
    if len(data) > MEMORY_FILE_MAX_BYTES:
        raise InvalidArgument(
            f"MEMORY.md may be at most {MEMORY_FILE_MAX_BYTES} bytes, got {len(data)}"
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArgument("MEMORY.md must be valid UTF-8") from None
    if b"\x00" in data:
        raise InvalidArgument("MEMORY.md must not contain NUL bytes")


def _check_if_match(locked: LockedMemory, if_match: str | None) -> None:
    if not if_match_allows(if_match, locked.current.etag):
        raise PreconditionFailed(_STALE)


class MemoryFileEdits:
    def __init__(
        self,
        uow: UnitOfWorkFactory,
        workspace_factory: Callable[[str], Workspace],
    ) -> None:
        self._workspace = workspace_factory
        self._lock = MemoryWriteAccess(uow, workspace_factory)

    async def read(self, uid: str) -> tuple[bytes, str]:
        try:
            data = await self._workspace(uid).read_file(MEMORY_PATH, MEMORY_FILE_MAX_BYTES)
        except WorkspaceFileNotFound:
            data = b""
        return data, etag_for(data)

    async def user_write(self, uid: str, data: bytes, *, if_match: str | None) -> str:
        _check_file(data)
        async with self._lock.for_user(uid) as locked:
            _check_if_match(locked, if_match)
            if data != locked.current.data or locked.current.truncated:
                await locked.publish(data, actor="user", kind="edit")
        return etag_for(data)

    async def user_delete(self, uid: str, *, if_match: str | None) -> None:
        async with self._lock.for_user(uid) as locked:
            _check_if_match(locked, if_match)
            if locked.current.data or locked.current.truncated:
                await locked.publish(None, actor="user", kind="delete")
            else:
                # Already empty: nothing changes that a version could record, but an empty file
                # that is there still goes.
                with contextlib.suppress(WorkspaceFileNotFound):
                    await locked.workspace.delete_file(MEMORY_PATH)

    async def agent_write(
        self,
        identity: RunIdentity,
        data: bytes,
        *,
        tool_call_id: str | None,
        if_match: str | None,
    ) -> str:
        _check_file(data)
        async with self._lock.for_agent(identity) as locked:
            _check_if_match(locked, if_match)
            if data != locked.current.data or locked.current.truncated:
                provenance = await locked.agent_provenance(tool_call_id)
                await locked.publish(data, actor="agent", kind="edit", provenance=provenance)
        return etag_for(data)
