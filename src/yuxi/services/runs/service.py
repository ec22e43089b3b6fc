"""The run lifecycle: claim, heartbeat, the lease-fenced record of a run, finish, reconcile.

A worker claims a pending run and gets a :class:`ClaimedRun` whose :class:`RunIdentity` is built
once, from the claimed row; every later call takes that identity. Everything a worker writes
while it runs (events, messages, tool calls, the memory snapshot, the final status) is written
in its own unit of work that first checks — in the same transaction, by the database clock —
that the identity's worker still owns a live lease on the run. A worker that lost its lease gets
:class:`LeaseLost` and must stop: it cannot add to the record or finish the run.

SubAgent runs hold no lease (their parent's worker runs them): :meth:`RunService.start_subagent`
is fenced by the *parent's* lease and returns the child's identity with ``worker_id=None``.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from yuxi.errors import UnauthorizedRun
from yuxi.identity import RunIdentity
from yuxi.observability.metrics import Metrics
from yuxi.services.runs._recording import RunRecord
from yuxi.services.runs._records import (
    ClaimedRun,
    Heartbeat,
    LeaseLost,
    PreviousRun,
    ProposedToolCall,
    ReconciledRun,
    ToolOutcome,
    claimed_run,
    not_completed,
)
from yuxi.services.unit_of_work import UnitOfWork, UnitOfWorkFactory
from yuxi.vocabulary import LEASE_EXPIRED, PARENT_RUN_ENDED

if TYPE_CHECKING:
    from yuxi.db.models import Conversation

__all__ = [
    "ClaimedRun",
    "Heartbeat",
    "LeaseLost",
    "PreviousRun",
    "ProposedToolCall",
    "ReconciledRun",
    "RunRecord",
    "RunService",
    "ToolOutcome",
]


def _lease_token(identity: RunIdentity) -> str:
    """The worker token a fenced write checks; a SubAgent identity holds no lease at all."""
    if identity.worker_id is None:
        raise LeaseLost(f"run {identity.run_id} holds no lease")
    return identity.worker_id


class RunService:
    def __init__(
        self, uow: UnitOfWorkFactory, *, lease_seconds: float, metrics: Metrics | None = None
    ) -> None:
        self._uow = uow
        self._lease_seconds = lease_seconds
        self._metrics = metrics or Metrics()

    # -- claim, heartbeat, reconcile ----------------------------------------------------------

    async def claim_next(self) -> ClaimedRun | None:
        """Claim the oldest pending chat/resume run for a fresh worker token.

        One ``UPDATE … RETURNING`` in autocommit (``one_statement``): it commits as it ends,
        and nothing else belongs with it. A claim cut off by the worker's own cancellation may
        still commit; its lease then runs out and reconciliation fails the run
        (``worker_lease_expired``), as for a worker that died right after claiming."""
        async with self._uow.one_statement() as uow:
            row = await uow.runs.claim_next(lease_seconds=self._lease_seconds)
        return None if row is None else claimed_run(row)

    async def claim(self, run_id: str) -> ClaimedRun | None:
        """Claim one specific pending run (tests, fast paths); one statement, as above."""
        async with self._uow.one_statement() as uow:
            row = await uow.runs.claim(run_id, lease_seconds=self._lease_seconds)
        return None if row is None else claimed_run(row)

    async def heartbeat(self, identity: RunIdentity) -> Heartbeat:
        """Renew the lease and read the cancel request, in one transaction."""
        token = _lease_token(identity)
        async with self._uow() as uow:
            cancel = await uow.runs.renew_lease_and_read_cancel(
                identity.run_id, token, lease_seconds=self._lease_seconds
            )
            await uow.commit()
        return Heartbeat(alive=cancel is not None, cancel_requested=bool(cancel))

    async def reconcile(self) -> list[ReconciledRun]:
        """Fail runs whose lease expired, then SubAgent runs whose parent is over; one
        ``run_status`` event each, carrying the code the row got."""
        async with self._uow() as uow:
            reconciled = [
                ReconciledRun(run_id, LEASE_EXPIRED)
                for run_id in await uow.runs.fail_expired_leases()
            ]
            reconciled += [
                ReconciledRun(run_id, PARENT_RUN_ENDED)
                for run_id in await uow.runs.fail_orphaned_subagents()
            ]
            for run in reconciled:
                await uow.events.append(
                    run.run_id,
                    "run_status",
                    {"status": "failed", "error": {"code": run.error_code}},
                )
            await uow.commit()
        for run in reconciled:
            self._metrics.reconciled(run.error_code)
        return reconciled

    # -- the lease-fenced record of a run ---------------------------------------------------------

    @asynccontextmanager
    async def _fenced(self, identity: RunIdentity) -> AsyncIterator[UnitOfWork]:
        """A unit of work that holds the run's row ``FOR SHARE`` while its worker owns a live
        lease (so the lease cannot change under the writes); commits when the block ends."""
        token = _lease_token(identity)
        async with self._uow() as uow:
            if not await uow.runs.lock_live_lease(identity.run_id, token):
                raise LeaseLost(identity.run_id)
            yield uow
            await uow.commit()

    @asynccontextmanager
    async def recording(self, identity: RunIdentity) -> AsyncIterator[RunRecord]:
        """One step of the run's record (``_recording``): what the block records through the
        :class:`RunRecord` is written as it ends, in one statement fenced by the worker's live
        lease — all of it, or :class:`LeaseLost` and none (the lease is lost, or the run's
        thread is gone). A block that fails writes nothing."""
        record = RunRecord()
        yield record
        await self._write(identity, record)

    async def _write(self, identity: RunIdentity, record: RunRecord) -> None:
        """``record``'s writes in one statement, sent outside a transaction block
        (``one_statement``: no ``BEGIN``, no ``COMMIT``; one statement is atomic by itself)."""
        token = _lease_token(identity)
        writes = record.writes
        async with self._uow.one_statement() as uow:
            result = await uow.steps.record(
                identity.run_id, token, identity.uid, identity.thread_id, writes
            )
        if not result.fenced:
            raise LeaseLost(identity.run_id)
        if not result.threaded:
            raise LeaseLost(f"thread of run {identity.run_id} is gone")
        if writes.end is not None and not result.ended:
            raise LeaseLost(identity.run_id)

    @asynccontextmanager
    async def holding_lease(self, identity: RunIdentity) -> AsyncIterator[None]:
        """Hold the run's row ``FOR SHARE`` for the block, while its worker owns a live lease.

        For a side effect outside the database (an approved write of a workspace file): a worker
        that lost its lease gets :class:`~yuxi.errors.UnauthorizedRun` and must not do it; while
        the block runs, the lease can be neither renewed away nor reconciled.
        """
        try:
            async with self._fenced(identity):
                yield
        except LeaseLost:
            raise UnauthorizedRun(
                "this run no longer holds its lease; nothing was written"
            ) from None

    @staticmethod
    async def _thread(uow: UnitOfWork, identity: RunIdentity) -> Conversation:
        conversation = await uow.threads.get_owned(identity.uid, identity.thread_id)
        if conversation is None:
            raise LeaseLost(f"thread of run {identity.run_id} is gone")
        return conversation

    async def start(
        self,
        identity: RunIdentity,
        *,
        attempt: int,
        snapshot: tuple[str, int] | None,
        previous: PreviousRun | None = None,
    ) -> None:
        """A run starts, in one fenced statement: its ``running`` event, the memory snapshot
        it will see (sha256 and size; None: memory off) and, for a chat run whose claim found
        tool calls an earlier run left open (``previous``: it was cancelled, failed or lost its
        lease between a call and its result), those calls closed in the thread's records."""
        start = RunRecord()
        start.event("run_status", {"status": "running", "attempt": attempt})
        if snapshot is not None:
            start.memory_snapshot(*snapshot)
        if previous is not None and previous.open_calls:
            start.close_open_tool_calls(not_completed(previous.status, previous.error_code))
        await self._write(identity, start)

    async def record_event(
        self, identity: RunIdentity, event_type: str, data: dict[str, Any]
    ) -> None:
        """One event alone (a step that streamed text, say): one fenced statement."""
        async with self.recording(identity) as record:
            record.event(event_type, data)

    async def record_tool_calls(
        self, identity: RunIdentity, content: str, calls: Sequence[ProposedToolCall]
    ) -> None:
        async with self.recording(identity) as record:
            record.tool_calls(content, calls)

    async def record_tool_result(self, identity: RunIdentity, outcome: ToolOutcome) -> None:
        async with self.recording(identity) as record:
            record.tool_result(outcome)

    async def record_reply(self, identity: RunIdentity, content: str) -> None:
        async with self.recording(identity) as record:
            record.reply(content)

    async def record_memory_snapshot(self, identity: RunIdentity, sha256: str, size: int) -> None:
        async with self.recording(identity) as record:
            record.memory_snapshot(sha256, size)

    async def finish(
        self,
        identity: RunIdentity,
        status: str,
        *,
        output: dict[str, Any] | None = None,
        error_code: str | None = None,
        error_message: str | None = None,
    ) -> None:
        """Record the final status event and finish — atomically, and only as the owner: one
        fenced step of the run's record with nothing but its end (:meth:`RunRecord.finish`)."""
        async with self.recording(identity) as record:
            record.finish(status, output=output, error_code=error_code, error_message=error_message)

    # -- resume and SubAgents -----------------------------------------------------------------

    async def interrupted_action_requests(self, claimed: ClaimedRun) -> list[Any]:
        """The action requests of the interrupted run a ``resume`` run answers (none if it is
        not a resume or the interrupt carried none)."""
        if claimed.created_by_run_id is None:
            return []
        async with self._uow.one_statement() as uow:  # one read: no BEGIN, no ROLLBACK
            parent = await uow.runs.get_owned(claimed.identity.uid, claimed.created_by_run_id)
            output = dict(parent.output or {}) if parent is not None else {}
        interrupt = output.get("interrupt") or {}
        requests = interrupt.get("action_requests") if isinstance(interrupt, dict) else None
        return list(requests or [])

    async def start_subagent(self, parent: RunIdentity, task: str) -> RunIdentity:
        """Persist a SubAgent's child thread (linked to the parent's, so history never shows
        it), its ``subagent`` run and the task message, while the parent's lease is live.

        The child identity has ``worker_id=None``: no SubAgent can pass a lease check.
        """
        async with self._fenced(parent) as uow:
            parent_thread = await self._thread(uow, parent)
            child = await uow.threads.create_conversation(
                parent.uid, title=f"SubAgent: {task[:60]}"
            )
            await uow.threads.link_subagent_thread(parent_thread, child, parent.run_id)
            run, _ = await uow.runs.create_run(
                uid=parent.uid,
                thread_id=child.thread_id,
                request_id=f"subagent:{parent.run_id}:{uuid.uuid4().hex}",
                run_type="subagent",
                status="running",
                input_payload={"task": task},
                created_by_run_id=parent.run_id,
            )
            await uow.threads.add_message(child, role="user", content=task, run_id=run.id)
            child_identity = RunIdentity(
                uid=parent.uid,
                thread_id=child.thread_id,
                run_id=run.id,
                request_id=run.request_id,
                worker_id=None,
            )
        return child_identity

    async def finish_subagent(self, child: RunIdentity, status: str, reply: str) -> bool:
        """Settle the SubAgent's run and put its answer in its thread. False (and nothing
        written) when the run was already settled — e.g. failed by reconciliation because the
        parent ended first."""
        async with self._uow() as uow:
            settled = await uow.runs.finish_subagent(
                child.run_id, status=status, output={"reply": reply}
            )
            if not settled:
                return False
            added = await uow.threads.add_message_to_thread(
                child.uid, child.thread_id, role="assistant", content=reply, run_id=child.run_id
            )
            if added is None:  # the child's thread is gone: nothing is written
                return False
            await uow.commit()
        return True
