"""A user's own workspace files, as the file API and the web UI's editor see them.

Every read answers a strong ETag; every write or delete may carry ``If-Match``, and a stale one is
refused with :class:`~yuxi.errors.PreconditionFailed` (HTTP 412) without touching the file.

``agents/MEMORY.md`` is special: its reads, writes and deletes go to the memory service, whose
writer takes the same per-uid locks as the agent's ``remember_memory``, so a user's edit and the
agent's update never lose each other. Every other file's check-then-write runs under the user's
workspace file lock, so two editors with the same ETag cannot both win.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from yuxi.errors import (
    FileTooLarge,
    InvalidArgument,
    NotFound,
    PreconditionFailed,
    PreconditionRequired,
    WorkspaceFileNotFound,
)
from yuxi.identity import RunIdentity
from yuxi.limits import FILE_API_MAX_BYTES
from yuxi.services.memory.service import MemoryService
from yuxi.services.runs.service import RunService
from yuxi.services.unit_of_work import UnitOfWorkFactory
from yuxi.workspace.filesystem import MEMORY_PATH, FileEntry, Workspace, etag_for, if_match_allows

STALE = "the file changed since you loaded it"


@dataclass(frozen=True)
class FileContent:
    data: bytes
    etag: str


class WorkspaceFileService:
    def __init__(
        self,
        workspaces: Callable[[str], Workspace],
        memory: MemoryService,
        runs: RunService,
        *,
        uow: UnitOfWorkFactory,
    ) -> None:
        self._workspaces = workspaces
        self._memory = memory
        self._runs = runs
        self._uow = uow

    async def list_files(self, uid: str, path: str = "") -> list[FileEntry]:
        """Every entry under ``path`` (recursive); the workspace is created on first use."""
        workspace = await self._ready(uid)
        return await workspace.list_files(path, recursive=True)

    async def read_file(self, uid: str, path: str) -> FileContent:
        workspace = await self._ready(uid)
        if path == MEMORY_PATH:
            data, etag = await self._memory.read_memory_file(uid)
            return FileContent(data, etag)
        data = await workspace.read_file(path, FILE_API_MAX_BYTES)
        return FileContent(data, etag_for(data))

    async def write_file(
        self,
        uid: str,
        path: str,
        data: bytes,
        *,
        if_match: str | None = None,
        if_none_match: str | None = None,
    ) -> str:
        """Replace (or create) a UTF-8 text file; returns its new ETag.

        ``if_none_match="*"`` creates only: an existing file is refused with 412. MEMORY.md is
        never replaced blindly: without ``if_match`` (its ETag from a read, or ``*``) the write
        is refused with :class:`~yuxi.errors.PreconditionRequired` (428).
        """
        if if_none_match is not None and if_none_match.strip() != "*":
            raise InvalidArgument('If-None-Match on a write may only be "*" (create only)')
        create_only = if_none_match is not None
        if path == MEMORY_PATH:
            if create_only:
                raise PreconditionFailed("MEMORY.md already exists")  # every workspace has one
            if if_match is None:
                raise PreconditionRequired(
                    "replace MEMORY.md with If-Match: <its ETag from GET> (or *), so an edit "
                    "never overwrites memory it has not seen"
                )
            await self._ready(uid)
            return await self._memory.write_memory_file(uid, data, if_match=if_match)
        if len(data) > FILE_API_MAX_BYTES:
            raise FileTooLarge(f"files may be at most {FILE_API_MAX_BYTES} bytes")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidArgument("files must be valid UTF-8 text") from None
        await self._owner_exists(uid)
        workspace = self._workspaces(uid)
        async with self._edit_lock(workspace):
            # Again under the lock: an account deletion commits while holding it, so a request
            # that authenticated before the deletion began brings no file (and no directory)
            # back once it is done.
            await self._owner_exists(uid)
            await workspace.ensure_user_workspace()
            if if_match is not None or create_only:
                try:
                    current = etag_for(await workspace.read_file(path, FILE_API_MAX_BYTES))
                except WorkspaceFileNotFound:
                    current = ""  # a missing file matches only "*"
                if create_only and current:
                    raise PreconditionFailed(f"{path} already exists")
                if not if_match_allows(if_match, current):
                    raise PreconditionFailed(STALE)
            await workspace.write_file(path, data)
        return etag_for(data)

    async def delete_file(self, uid: str, path: str, *, if_match: str | None = None) -> None:
        if path == MEMORY_PATH:
            await self._memory.delete_memory_file(uid, if_match=if_match)
            return
        workspace = self._workspaces(uid)
        async with self._edit_lock(workspace):
            if if_match is not None:
                current = etag_for(await workspace.read_file(path, FILE_API_MAX_BYTES))
                if not if_match_allows(if_match, current):
                    raise PreconditionFailed(STALE)
            await workspace.delete_file(path)

    async def agent_rewrite_file(
        self,
        identity: RunIdentity,
        path: str,
        rewrite: Callable[[bytes | None], bytes],
        *,
        max_bytes: int,
        read_current: bool = True,
    ) -> bytes:
        """An agent run's (approved) write of an ordinary workspace file: ``rewrite`` gets the
        current bytes (``None`` when missing, or when ``read_current`` is false: a whole-file
        write) and returns the new ones, which are published.

        The whole read-rewrite-publish holds the run's live lease (a worker that lost it gets
        :class:`~yuxi.errors.UnauthorizedRun` and writes nothing) and the user's workspace lock
        (no other editor interleaves). ``rewrite`` may raise to refuse; nothing is written then.
        MEMORY.md never comes here (``MemoryService.agent_write_memory_file`` writes it).
        """
        if path == MEMORY_PATH:
            raise InvalidArgument("MEMORY.md is written through the memory service")
        workspace = self._workspaces(identity.uid)
        if workspace.uid != identity.uid:
            raise InvalidArgument("the workspace does not belong to the run's user")
        async with self._runs.holding_lease(identity), workspace.locked():
            current: bytes | None = None
            if read_current:
                with contextlib.suppress(WorkspaceFileNotFound):
                    current = await workspace.read_file(path, max_bytes)
            data = rewrite(current)
            await workspace.write_file(path, data)
        return data

    async def _owner_exists(self, uid: str) -> None:
        async with self._uow() as uow:
            if await uow.users.get(uid) is None:
                raise NotFound("user not found")

    async def _ready(self, uid: str) -> Workspace:
        await self._owner_exists(uid)
        workspace = self._workspaces(uid)
        await workspace.ensure_user_workspace()
        return workspace

    @staticmethod
    @asynccontextmanager
    async def _edit_lock(workspace: Workspace) -> AsyncIterator[None]:
        # The user's per-workspace flock (the one MEMORY.md writers hold inside their advisory
        # lock): it makes If-Match check-then-write atomic between editors in any process. It
        # is taken here without a database lock inside, so it cannot deadlock with them.
        async with workspace.locked():
            yield
