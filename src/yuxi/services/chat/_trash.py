"""The trash (issue 36 §1, design.md §12.3): a deleted thread stays restorable for
``YUXI_TRASH_DAYS``, then it is purged whole.

*Deleting* (:func:`move_to_trash`, in the deletion's unit of work) marks the thread ``deleted``
with ``deleted_at = now()`` and cancels its active runs (pending ones at once, running ones by a
cancel request their worker hears). From then on nothing writes to it: a message or a decision
on a deleted thread is refused, and the memory gate refuses its runs' writes.

*Restoring* makes it ``active`` again with everything it had (messages, tool calls, runs,
checkpoints): only what its deletion changed comes back. The memory entries a deletion with
``forget_memory`` removed are not restored (that ``forget`` version is the memory history's; it
can be undone from the memory panel like any version).

*Purging* (:meth:`ThreadTrash.purge_due`, run by the worker pool and ``yuxi threads purge``;
:meth:`ThreadTrash.delete_now` for the owner's "Delete now") removes, in one transaction per
batch of ``TRASH_PURGE_BATCH_THREADS`` threads: the thread and its SubAgent threads, their
messages, search rows, tool calls, runs, run events and LangGraph checkpoints (blobs and writes
too), and clears every memory version's link to them (thread, run, asking message, tool call;
the version and its memory text stay, shown as from "a deleted thread"). It is

* **lease-safe**: a thread with a pending run, or a running one under a live lease, is never
  taken (it waits for the next pass); its threads are locked ``FOR UPDATE SKIP LOCKED``, so a
  restore and a purge never both win, and several purgers (worker processes) take disjoint
  threads;
* **idempotent**: what is purged is gone, so a second pass finds nothing; a pass that failed
  rolled back whole and the next one does it again.

After the commit the checkpoint tables are swept once more for the purged thread ids, as the
account deletion does (a checkpoint the LangGraph saver wrote meanwhile on its own connection).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from yuxi.db.models import Conversation
from yuxi.errors import Conflict, NotFound
from yuxi.limits import TRASH_LIST_MAX_THREADS, TRASH_PURGE_BATCH_THREADS
from yuxi.repositories.trash_repository import PurgeTarget
from yuxi.services.chat._cancel import cancel_in
from yuxi.services.chat.views import ThreadSummary, thread_summary
from yuxi.services.unit_of_work import UnitOfWork, UnitOfWorkFactory
from yuxi.vocabulary import ACTIVE_RUN_STATUSES

__all__ = ["PurgeReport", "ThreadTrash", "TrashList", "TrashedThread", "move_to_trash"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrashedThread:
    """A thread in the trash: when it was deleted, when it will be purged (at the earliest: the
    next purge pass after that moment), and whether its deletion forgot the memory it wrote
    (those entries are not restored with it)."""

    thread_id: str
    title: str
    source: str
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime
    purge_after: datetime
    memory_forgotten: bool


@dataclass(frozen=True)
class TrashList:
    """The caller's trash, newest deletion first, and how long a thread stays in it."""

    trash_days: int
    threads: list[TrashedThread]


@dataclass
class PurgeReport:
    """What a purge removed: the threads (ids), rows per table (checkpoint tables included),
    memory versions whose link to them was cleared, and the threads whose time is over but
    which a live run still holds (purged by a later pass)."""

    threads: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    versions_unlinked: int = 0
    waiting: int = 0

    def add(self, threads: list[str], rows: dict[str, int], unlinked: int) -> None:
        self.threads.extend(threads)
        for table, count in rows.items():
            self.rows[table] = self.rows.get(table, 0) + count
        self.versions_unlinked += unlinked


async def move_to_trash(uow: UnitOfWork, uid: str, thread_id: str) -> None:
    """Mark the caller's thread deleted (``deleted_at`` = now) and cancel its active runs."""
    # The row lock first: a message being posted meanwhile (it touches the thread's row)
    # commits before this goes on, so its run is among those cancelled below.
    await uow.threads.set_status(uid, thread_id, "deleted")
    for run in await uow.runs.list_for_thread(uid, thread_id):
        if run.status in ACTIVE_RUN_STATUSES:
            await cancel_in(uow, run)


class ThreadTrash:
    def __init__(self, uow: UnitOfWorkFactory, *, days: int) -> None:
        self._uow = uow
        #: ``YUXI_TRASH_DAYS``: days a deleted thread stays restorable (0: purged at once).
        self.days = days

    def _trashed(self, conversation: Conversation, forgotten: bool) -> TrashedThread:
        deleted_at = conversation.deleted_at
        if deleted_at is None:  # the database's check makes this impossible
            raise ValueError("a deleted thread without deleted_at")
        return TrashedThread(
            thread_id=conversation.thread_id,
            title=conversation.title,
            source=conversation.source,
            created_at=conversation.created_at,
            updated_at=conversation.updated_at,
            deleted_at=deleted_at,
            purge_after=deleted_at + timedelta(days=self.days),
            memory_forgotten=forgotten,
        )

    async def list_threads(self, uid: str, *, limit: int = TRASH_LIST_MAX_THREADS) -> TrashList:
        """The caller's deleted chat threads, newest deletion first (``limit`` 0: none, only
        the days)."""
        limit = max(0, min(int(limit), TRASH_LIST_MAX_THREADS))
        if limit == 0:
            return TrashList(self.days, [])
        async with self._uow() as uow:
            rows = await uow.trash.list_deleted(uid, limit)
        return TrashList(self.days, [self._trashed(c, forgot) for c, forgot in rows])

    async def restore(self, uid: str, thread_id: str) -> ThreadSummary:
        """Make the caller's deleted thread active again, with everything it had. Anyone
        else's thread, one not in the trash, or one purged meanwhile is NotFound."""
        async with self._uow() as uow:
            conversation = await uow.trash.lock_deleted(uid, thread_id)
            if conversation is None:
                raise NotFound("thread not found in the trash")
            await uow.threads.set_status(uid, thread_id, "active")
            await uow.commit()
        return thread_summary(conversation)

    async def delete_now(self, uid: str, thread_id: str) -> PurgeReport:
        """Purge the caller's thread from the trash now, whatever its age. A run of it still
        stopping (a live lease) is a Conflict: nothing is removed, try again in a moment."""
        report = PurgeReport()
        async with self._uow() as uow:
            await uow.trash.lock_owners_memory([uid])
            conversation = await uow.trash.lock_deleted(uid, thread_id)
            if conversation is None:
                raise NotFound("thread not found in the trash")
            if await uow.trash.has_live_run(thread_id):
                raise Conflict(
                    "a run of this thread is still stopping; nothing was removed, try again "
                    "in a moment"
                )
            target = PurgeTarget(conversation.id, uid, thread_id)
            names, rows, unlinked = await self._purge_locked(uow, [target])
            await uow.commit()
        report.add([thread_id], rows, unlinked)
        await self._sweep_checkpoints(names, report)
        return report

    async def purge_if_immediate(self, uid: str, thread_id: str) -> None:
        """With ``YUXI_TRASH_DAYS=0``, purge a thread just deleted at once (a run of it still
        stopping leaves it to the purge job's next pass). The deletion is already committed:
        a purge that fails here is logged and left to the job, never the deletion's error."""
        if self.days != 0:
            return
        try:
            names, *_ = await self._purge_batch(days=0, uid=uid, thread_id=thread_id, limit=1)
            await self._sweep_checkpoints(names, PurgeReport())
        except Exception:
            _log.warning("purging a deleted thread at once failed; the purge job retries it")

    async def purge_due(self, *, batch: int = TRASH_PURGE_BATCH_THREADS) -> PurgeReport:
        """Purge every thread whose ``YUXI_TRASH_DAYS`` are over, ``batch`` threads per
        transaction, until a batch comes back short (the rest is held by a live run or by
        another purger); then count those still waiting for their run."""
        report = PurgeReport()
        while True:
            names, threads, rows, unlinked = await self._purge_batch(days=self.days, limit=batch)
            report.add(threads, rows, unlinked)
            await self._sweep_checkpoints(names, report)
            if len(threads) < batch:
                break
        async with self._uow() as uow:
            report.waiting = await uow.trash.waiting(days=self.days)
        return report

    async def _purge_batch(
        self, *, days: int, limit: int, uid: str | None = None, thread_id: str | None = None
    ) -> tuple[list[str], list[str], dict[str, int], int]:
        """One transaction: the owners' memory locks (before any row's, as every memory writer
        and the account deletion take them), then up to ``limit`` purgeable threads of theirs
        locked and purged; the thread ids removed (SubAgent threads included), the top-level
        ones, rows, versions unlinked."""
        async with self._uow() as uow:
            owners = await uow.trash.due_owners(
                days=days, limit=limit, uid=uid, thread_id=thread_id
            )
            if not owners:
                return [], [], {}, 0
            await uow.trash.lock_owners_memory(owners)
            targets = await uow.trash.lock_purgeable(
                days=days, limit=limit, uids=owners, thread_id=thread_id
            )
            if not targets:
                return [], [], {}, 0
            names, rows, unlinked = await self._purge_locked(uow, targets)
            await uow.commit()
        return names, [t.thread_id for t in targets], rows, unlinked

    @staticmethod
    async def _purge_locked(
        uow: UnitOfWork, targets: list[PurgeTarget]
    ) -> tuple[list[str], dict[str, int], int]:
        """Purge ``targets`` (locked by this unit of work) and their SubAgent threads."""
        children = await uow.trash.subagent_threads([t.id for t in targets])
        ids = [t.id for t in targets] + [child_id for child_id, _ in children]
        names = [t.thread_id for t in targets] + [name for _, name in children]
        uids = [t.uid for t in targets]  # their memory locks are held already
        unlinked = await uow.trash.forget_provenance(uids, names)
        rows = await uow.accounts.delete_checkpoints(names)
        rows.update(await uow.trash.delete_threads(ids, names))
        return names, rows, unlinked

    async def _sweep_checkpoints(self, names: list[str], report: PurgeReport) -> None:
        if not names:
            return
        async with self._uow() as uow:
            late = await uow.accounts.delete_checkpoints(names)
            await uow.commit()
        report.add([], late, 0)
