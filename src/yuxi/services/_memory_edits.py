"""The user-edit half of MEMORY.md: the file API, the web UI and the generic file tools.

A user's edit is published under exactly the locks ``remember_memory`` takes (the per-uid
advisory lock, then the per-uid file lock), so neither can lose the other's update; ``If-Match``
turns a stale edit into :class:`~yuxi.errors.PreconditionFailed` instead of an overwrite.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from yuxi.errors import InvalidArgument, PreconditionFailed, WorkspaceFileNotFound
from yuxi.limits import MEMORY_FILE_MAX_BYTES
from yuxi.services._memory_lock import memory_file_lock
from yuxi.services.unit_of_work import UnitOfWorkFactory
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace, etag_for, if_match_allows

__all__ = ["UserMemoryEdits"]


class UserMemoryEdits:
    def __init__(
        self,
        uow: UnitOfWorkFactory,
        workspace_root: Path,
        workspace_factory: Callable[[str], Workspace],
    ) -> None:
        self._uow = uow
        self._root = workspace_root
        self._workspace = workspace_factory

    async def read(self, uid: str) -> tuple[bytes, str]:
        try:
            data = await self._workspace(uid).read_file(MEMORY_PATH, MEMORY_FILE_MAX_BYTES)
        except WorkspaceFileNotFound:
            data = b""
        return data, etag_for(data)

    async def write(self, uid: str, data: bytes, *, if_match: str | None) -> str:
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
        async with self._locked(uid, if_match) as workspace:
            await workspace.replace_authorized_file(MEMORY_PATH, data)
        return etag_for(data)

    async def delete(self, uid: str, *, if_match: str | None) -> None:
        async with self._locked(uid, if_match) as workspace:
            with contextlib.suppress(WorkspaceFileNotFound):
                await workspace.delete_file(MEMORY_PATH)

    @asynccontextmanager
    async def _locked(self, uid: str, if_match: str | None) -> AsyncIterator[Workspace]:
        """Hold the per-uid advisory lock and file lock; check ``If-Match`` against the file."""
        workspace = self._workspace(uid)
        async with self._uow() as uow:
            await uow.runs.lock_user_memory(uid)
            async with memory_file_lock(self._root, workspace.directory.name):
                # No header and "*" match anything: skip reading the current bytes then.
                if if_match is not None and if_match.strip() != "*":
                    try:
                        current = await workspace.read_file(MEMORY_PATH, MEMORY_FILE_MAX_BYTES + 1)
                    except WorkspaceFileNotFound:
                        current = b""
                    if not if_match_allows(if_match, etag_for(current)):
                        raise PreconditionFailed(
                            "MEMORY.md changed since you loaded it; reload and re-apply your edit"
                        )
                yield workspace
            # The advisory lock is transaction-scoped: it is released when this block ends,
            # after the publish above (nothing is written to the database, so no commit).
