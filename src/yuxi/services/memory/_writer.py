"""The one locked write path of MEMORY.md, shared by every writer.

A writer opens :meth:`MemoryWriteAccess.for_user` (the owner: file API, UI, restore, undo) or
:meth:`MemoryWriteAccess.for_agent` (a leased run: ``remember_memory``, the generic file tools
after approval), each in one :class:`~yuxi.services.unit_of_work.UnitOfWork`. Either holds, in
this order and until it ends:

1. the per-uid PostgreSQL advisory lock (for an agent, taken by the gate, ``uow.memory_gate``,
   in the same statement that ``SELECT … FOR UPDATE``\\ s the run, checks its lease by the
   database clock and reads the switch ``FOR SHARE``: off → refused);
2. the per-uid workspace lock (:meth:`~yuxi.workspace.filesystem.Workspace.locked_then`),

and reads the current file (the flock and the read in one worker thread). :meth:`LockedMemory.
publish` then records the version (one statement: gap check, insert, asking message, quota,
retention) and only once it is in replaces the file (temp written and fsynced, rename,
directory fsync; one worker thread); the block commits as it ends, still inside both locks. A
block that published nothing commits nothing.

So a record that fails or is cancelled leaves MEMORY.md as it was and no temp file: nothing was
written yet. A replacement that fails (``StorageFull``, ``StorageReadOnly``, ``EIO``: the old
file intact, no temp left) marks the block failed, and a failed block never commits: its version
rolls back with the transaction, even if the caller caught the error and went on. Once the
replacement has started, a cancelled writer still waits for it to end before it lets go of the
locks (otherwise the next writer could read the file the rename is about to replace); its
transaction then rolls back and the next write records the file as ``system`` / ``recovered``.

An agent's write is therefore three statements (gate, record, commit) and two hops off the
event loop (flock + read; replace).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from yuxi.errors import (
    MemoryDisabled,
    MemoryReadOnly,
    NotFound,
    UnauthorizedRun,
    WorkspaceFileNotFound,
)
from yuxi.identity import RunIdentity
from yuxi.limits import MEMORY_FILE_MAX_BYTES
from yuxi.repositories.memory import MemoryWriteAuthorization
from yuxi.services.memory._versions import (
    NO_PROVENANCE,
    CurrentFile,
    NewVersion,
    Provenance,
    Quota,
    record_change,
)
from yuxi.services.unit_of_work import UnitOfWork, UnitOfWorkFactory
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace

__all__ = ["LockedMemory", "MemoryWriteAccess", "read_current_file_sync", "replace_memory_file"]


def read_current_file_sync(workspace: Workspace) -> CurrentFile:
    """MEMORY.md as it is now, bounded by the file limit (missing reads as empty)."""
    try:
        data, truncated = workspace.read_file_prefix_sync(MEMORY_PATH, MEMORY_FILE_MAX_BYTES)
    except WorkspaceFileNotFound:
        return CurrentFile(b"")
    return CurrentFile(data, truncated)


def _replace_sync(workspace: Workspace, data: bytes | None) -> None:
    if data is not None:
        workspace.replace_file_sync(MEMORY_PATH, data)
        return
    with contextlib.suppress(WorkspaceFileNotFound):
        workspace.delete_file_sync(MEMORY_PATH)


async def replace_memory_file(workspace: Workspace, data: bytes | None) -> None:
    """Replace MEMORY.md with ``data`` (``None`` deletes it) in one worker thread, and return
    only once that thread is done — even when the caller is cancelled meanwhile (the
    cancellation is raised afterwards): a writer must not let go of the locks while its file is
    still being replaced."""
    job = asyncio.get_running_loop().run_in_executor(None, _replace_sync, workspace, data)
    try:
        await asyncio.shield(job)
    except asyncio.CancelledError:
        while not job.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait((job,))
        if not job.cancelled():
            job.exception()  # retrieved: the cancellation is what the caller hears
        raise


@dataclass
class LockedMemory:
    """One writer's view of MEMORY.md while it holds the locks."""

    uow: UnitOfWork
    workspace: Workspace
    uid: str
    current: CurrentFile
    #: For an agent writer: the gate's answer (the run's quota used so far).
    auth: MemoryWriteAuthorization | None = None
    identity: RunIdentity | None = None
    published: list[NewVersion] = field(default_factory=list)
    #: A replacement failed (a full or read-only disk, EIO, a cancellation): the block commits
    #: nothing, even if its caller goes on — the version recorded in it names bytes that are
    #: not on disk.
    failed: bool = False

    async def agent_provenance(self, tool_call_id: str | None) -> Provenance:
        """The run, thread and tool call of this agent write; the asking user message (the
        thread's newest) is looked up by the statement that records the version."""
        if self.identity is None:
            return NO_PROVENANCE
        return Provenance(
            run_id=self.identity.run_id,
            thread_id=self.identity.thread_id,
            tool_call_id=tool_call_id,
        )

    async def publish(
        self,
        result: bytes | None,
        *,
        actor: str,
        kind: str,
        provenance: Provenance = NO_PROVENANCE,
        target_version_id: str | None = None,
        quota: Quota | None = None,
    ) -> NewVersion:
        """Record the version (counting ``quota`` in the same statement), then replace the file
        with ``result`` (``None`` deletes it): the file changes only once its version is in."""
        version = await record_change(
            self.uow,
            self.uid,
            self.current,
            b"" if result is None else result,
            actor=actor,
            kind=kind,
            provenance=provenance,
            target_version_id=target_version_id,
            quota=quota,
        )
        try:
            await replace_memory_file(self.workspace, result)
        except BaseException:
            self.failed = True
            raise
        self.published.append(version)
        return version


class MemoryWriteAccess:
    def __init__(
        self,
        uow: UnitOfWorkFactory,
        workspace_factory: Callable[[str], Workspace],
    ) -> None:
        self._uow = uow
        self._workspace = workspace_factory

    @asynccontextmanager
    async def for_user(self, uid: str) -> AsyncIterator[LockedMemory]:
        """The owner's write: no switch and no run (the owner may always clean their memory)."""
        async with self._uow() as uow:
            await uow.runs.lock_user_memory(uid)
            # An account deletion holds this lock until it commits: a deleted user's late edit
            # stops here, before the workspace lock (whose file it would bring back).
            if await uow.users.get(uid) is None:
                raise NotFound("user not found")
            async with self._locked(uow, uid) as locked:
                yield locked

    @asynccontextmanager
    async def for_agent(self, identity: RunIdentity) -> AsyncIterator[LockedMemory]:
        """An agent's write: only the lease owner of a live run, only while memory is on."""
        if not identity.holds_lease:
            raise UnauthorizedRun("this run holds no lease and may not write memory")
        async with self._uow() as uow:
            auth = await uow.memory_gate.lock(identity)
            if not auth.ok:
                raise UnauthorizedRun(f"this run may not write memory: {auth.reason}")
            if auth.read_only:
                raise MemoryReadOnly(
                    "this is an evaluation run: it sees memory but may not change it"
                )
            # The switch as read under the lock: turning memory off mid-run wins.
            if not auth.memory_enabled:
                raise MemoryDisabled("memory is turned off for this user")
            async with self._locked(uow, identity.uid) as locked:
                locked.auth, locked.identity = auth, identity
                yield locked

    @asynccontextmanager
    async def _locked(self, uow: UnitOfWork, uid: str) -> AsyncIterator[LockedMemory]:
        workspace = self._workspace(uid)
        # One hop off the event loop: the flock and the read run in the same worker thread.
        async with workspace.locked_then(lambda: read_current_file_sync(workspace)) as current:
            locked = LockedMemory(uow, workspace, uid, current)
            yield locked
            if locked.published and not locked.failed:
                # Still inside both locks: the version and the file change become visible
                # together to the next writer (who would otherwise repair the gap).
                await uow.commit()
