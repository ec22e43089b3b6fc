"""Forget with the thread (issue 27 §1): the entries of MEMORY.md a thread wrote, and their
removal when the thread is deleted.

An entry *was written by a thread* when its source — the version that last introduced or
changed its text (:func:`~yuxi.services.memory._provenance.entry_sources`, the same rule the
memory API shows) — is a version recorded by one of the thread's runs (its chat runs and its
resume runs; SubAgents never write memory). An entry the user edited since has the user's edit
as its source, so it is not the thread's any more and stays; so does an entry that may predate
the oldest retained version (retention dropped the version that wrote it: its writer is unknown).

:meth:`ThreadMemory.delete_and_forget` does it all in one unit of work, under the locked write
path every owner's edit takes (:meth:`~yuxi.services.memory._writer.MemoryWriteAccess.for_user`:
the per-user advisory lock, then the workspace lock), in this order:

1. the thread is checked (the caller's own, not deleted: anything else is NotFound) and the
   file must be whole, valid UTF-8 (otherwise :class:`~yuxi.errors.MemoryConflict`: nothing
   changes, the thread stays);
2. the thread's entries are computed from the file and the versions read under the lock;
3. the caller's ``delete`` runs in the same transaction (the thread marked deleted, its active
   runs cancelled: a run still going can no longer pass the memory gate once this commits);
4. if any entry is the thread's, one ``user`` / ``forget`` version naming the thread is
   recorded and MEMORY.md replaced (:meth:`LockedMemory.publish`);
5. one commit makes the deletion and the version visible together.

Every failure before step 4's replacement rolls everything back (the thread is still there,
MEMORY.md unchanged). A commit lost after the replacement (the database gone at that instant)
leaves the file without the entries and the thread undeleted; the next memory write records the
file as ``system`` / ``recovered`` (design.md §10.2), the entries can be brought back by
restoring the version before, and the deletion can simply be retried.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass

from yuxi.db.models import MemoryVersion
from yuxi.errors import MemoryConflict, NotFound, WorkspaceFileNotFound
from yuxi.limits import MEMORY_FILE_MAX_BYTES
from yuxi.services.memory._entries import MemoryEntry, split_entries
from yuxi.services.memory._provenance import entry_sources
from yuxi.services.memory._versions import EMPTY_SHA256, Provenance
from yuxi.services.memory._writer import MemoryWriteAccess
from yuxi.services.memory.views import (
    MemoryEntryView,
    MemoryVersionView,
    entry_source,
    version_view,
)
from yuxi.services.unit_of_work import UnitOfWork, UnitOfWorkFactory
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace, etag_for

__all__ = ["ThreadForgetView", "ThreadMemory", "ThreadMemoryView", "remove_entries"]

_NOT_FOUND = "thread not found"


@dataclass(frozen=True)
class ThreadMemoryView:
    """The entries of the current MEMORY.md that the thread wrote (``etag``: the file's)."""

    thread_id: str
    etag: str
    entries: list[MemoryEntryView]


@dataclass(frozen=True)
class ThreadForgetView:
    """A thread deleted with its memory: the entry texts removed and the ``forget`` version
    (``None`` when the thread had written nothing that is still there)."""

    thread_id: str
    removed: list[str]
    version: MemoryVersionView | None
    etag: str


def remove_entries(text: str, entries: Collection[MemoryEntry]) -> str:
    """``text`` without the lines of ``entries``; a blank line that separated a removed block
    from the rest goes with it, so removals do not pile up blank lines. Every other line stays
    byte for byte (line endings included)."""
    lines = text.splitlines(keepends=True)
    drop: set[int] = set()  # 0-based line numbers
    for entry in entries:
        drop.update(range(entry.start_line - 1, entry.end_line))

    def blank(i: int) -> bool:
        return 0 <= i < len(lines) and i not in drop and not lines[i].strip()

    for entry in sorted(entries, key=lambda e: e.start_line):
        first, last = entry.start_line - 1, entry.end_line - 1
        before = first - 1
        while before >= 0 and before in drop:
            before -= 1
        if blank(last + 1) and (before < 0 or blank(before)):
            drop.add(last + 1)
        elif last + 1 >= len(lines) and blank(before):
            drop.add(before)  # the last block: the blank line above it goes
    kept = "".join(line for i, line in enumerate(lines) if i not in drop)
    return "" if not kept.strip() else kept


def _thread_entries(
    data: bytes, versions: Sequence[MemoryVersion], run_ids: Collection[str]
) -> list[tuple[MemoryEntry, MemoryVersion]]:
    """The entries whose source is a version of one of ``run_ids``.

    ``entry_sources`` gives an entry present in every retained version the oldest one; unless
    that version is the user's first ever (its parent is the empty file), retention has dropped
    what came before it, and the entry may be older than it. Such an entry's writer is unknown,
    so it is never the thread's: forgetting removes only what provably came from the thread.
    """
    entries = split_entries(data.decode("utf-8", errors="replace"))
    oldest = versions[-1] if versions else None
    found = []
    for entry, source in zip(entries, entry_sources(entries, versions), strict=True):
        if source is None or source.run_id is None or source.run_id not in run_ids:
            continue
        if source is oldest and source.parent_sha256 != EMPTY_SHA256:
            continue  # it may predate the oldest retained version: origin unknown
        found.append((entry, source))
    return found


async def _owned_thread(uow: UnitOfWork, uid: str, thread_id: str) -> str:
    """The title of the caller's own, not deleted thread (anything else is NotFound)."""
    conversation = await uow.threads.get_owned(uid, thread_id)
    if conversation is None or conversation.status == "deleted":
        raise NotFound(_NOT_FOUND)
    return conversation.title


async def _run_ids(uow: UnitOfWork, uid: str, thread_id: str) -> set[str]:
    return {run.id for run in await uow.runs.list_for_thread(uid, thread_id)}


class ThreadMemory:
    def __init__(
        self,
        uow: UnitOfWorkFactory,
        workspace_factory: Callable[[str], Workspace],
    ) -> None:
        self._uow = uow
        self._workspace = workspace_factory
        self._lock = MemoryWriteAccess(uow, workspace_factory)

    async def entries(self, uid: str, thread_id: str) -> ThreadMemoryView:
        """The entries of MEMORY.md whose source is a run of the caller's thread."""
        async with self._uow() as uow:
            title = await _owned_thread(uow, uid, thread_id)
            try:
                data = await self._workspace(uid).read_file(MEMORY_PATH, MEMORY_FILE_MAX_BYTES)
            except WorkspaceFileNotFound:
                data = b""
            run_ids = await _run_ids(uow, uid, thread_id)
            versions = await uow.memory_versions.list_newest_first(uid)
            found = await asyncio.to_thread(_thread_entries, data, versions, run_ids)
        return ThreadMemoryView(
            thread_id=thread_id,
            etag=etag_for(data),
            entries=[_entry_view(entry, source, {thread_id: title}) for entry, source in found],
        )

    async def delete_and_forget(
        self,
        uid: str,
        thread_id: str,
        delete: Callable[[UnitOfWork], Awaitable[None]],
    ) -> ThreadForgetView:
        """Run ``delete`` (the thread's deletion) and remove the thread's entries in one new
        ``forget`` version, in one transaction under the memory locks (see the module doc)."""
        async with self._lock.for_user(uid) as locked:
            uow = locked.uow
            await _owned_thread(uow, uid, thread_id)
            current = locked.current
            if current.truncated:
                raise MemoryConflict(
                    "MEMORY.md is larger than the file limit (edited outside Yuxi); shorten it "
                    "before deleting a thread with its memory"
                )
            try:
                text = current.data.decode("utf-8")
            except UnicodeDecodeError:
                raise MemoryConflict(
                    "MEMORY.md is not valid UTF-8 (edited outside Yuxi); fix it before "
                    "deleting a thread with its memory"
                ) from None
            run_ids = await _run_ids(uow, uid, thread_id)
            versions = await uow.memory_versions.list_newest_first(uid)
            found = await asyncio.to_thread(_thread_entries, current.data, versions, run_ids)
            await delete(uow)
            if not found:
                await uow.commit()  # nothing to publish: the deletion alone
                return ThreadForgetView(thread_id, [], None, current.etag)
            result = remove_entries(text, [entry for entry, _ in found]).encode("utf-8")
            version = await locked.publish(
                result,
                actor="user",
                kind="forget",
                provenance=Provenance(thread_id=thread_id),
            )
        return ThreadForgetView(
            thread_id=thread_id,
            removed=[entry.text for entry, _ in found],
            version=version_view(version, {}),
            etag=etag_for(result),
        )


def _entry_view(
    entry: MemoryEntry, source: MemoryVersion, titles: dict[str, str]
) -> MemoryEntryView:
    return MemoryEntryView(
        index=entry.index,
        text=entry.text,
        start_line=entry.start_line,
        end_line=entry.end_line,
        bytes=entry.bytes,
        in_prompt_window=entry.in_prompt_window,
        source=entry_source(source, titles),
    )
