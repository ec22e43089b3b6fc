"""AgentRun persistence and the PostgreSQL lease: the source of trusted execution identity.

A run is claimed by exactly one worker at a time. Each claim writes a fresh ``worker_id`` token and
a lease that ends at ``lease_expires_at``; the owner renews it with heartbeats. Every check of
"is this lease still alive?" is :func:`owned_live_lease`, made **by the database clock**
(``now()``), never the app's: app servers' clocks drift, the database is the one clock every
worker shares. The lease statements themselves are built in :mod:`._lease`.

Never commits: the service that calls it owns the transaction. ``now()`` is the transaction start
time, so callers keep lease transactions short.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import (
    Row,
    String,
    Table,
    bindparam,
    func,
    select,
    update,
)

from yuxi.db.models import AgentRun
from yuxi.db.notifications import RUN_CANCEL
from yuxi.db.prebuilt import PrebuiltStatement
from yuxi.repositories.memory import lock_user_memory
from yuxi.repositories.notify import notify
from yuxi.repositories.runs import _lease as lease
from yuxi.repositories.runs._creation import RunCreation
from yuxi.repositories.runs._lease import new_worker_id, owned_live_lease
from yuxi.repositories.runs._submission import run_of
from yuxi.vocabulary import (
    LEASE_EXPIRED,
    PARENT_RUN_ENDED,
    SETTLED_RUN_STATUSES,
)

__all__ = [
    "LEASE_EXPIRED",
    "PARENT_RUN_ENDED",
    "AgentRunRepository",
    "new_worker_id",
    "owned_live_lease",
]

_TABLE = cast(Table, AgentRun.__table__)
_RUNS = _TABLE.c
#: The lease fence of a transaction (:meth:`AgentRunRepository.lock_live_lease`), built once and
#: run prebuilt (:mod:`yuxi.db.prebuilt`): a side effect under the run's lease (an approved file
#: write) and a SubAgent's start take it. (A step of the run's record holds the same fence in its
#: own statement: ``yuxi.repositories.runs._step``.)
_LOCK_LIVE_LEASE = PrebuiltStatement(
    select(_RUNS.id)
    .where(
        owned_live_lease(bindparam("run_id", type_=String), bindparam("worker_id", type_=String))
    )
    .with_for_update(read=True)
)
#: A run by its owner, whole, for a request that only reads it (its status, its events'
#: stream's 404): built once and run prebuilt.
_READ_OWNED = PrebuiltStatement(
    select(*_TABLE.c).where(
        _RUNS.id == bindparam("run_id", type_=String),
        _RUNS.uid == bindparam("uid", type_=String),
    )
)


class AgentRunRepository(RunCreation):
    """Runs: created (:class:`~._creation.RunCreation`), read, claimed, leased and settled."""

    async def get(self, run_id: str) -> AgentRun | None:
        return await self.session.get(AgentRun, run_id, populate_existing=True)

    async def get_by_requests(self, uid: str, request_ids: list[str]) -> list[AgentRun]:
        """The user's runs holding any of ``request_ids`` (the unique ``(uid, request_id)``
        index answers it), in no particular order."""
        if not request_ids:
            return []
        rows = await self.session.execute(
            select(AgentRun).where(AgentRun.uid == uid, AgentRun.request_id.in_(request_ids))
        )
        return list(rows.scalars())

    async def cancel_pending(self, run_id: str) -> bool:
        stmt = (
            update(AgentRun)
            .where(AgentRun.id == run_id, AgentRun.status == "pending")
            .values(status="cancelled", finished_at=func.now(), cancel_requested=True)
            .returning(AgentRun.id)
        )
        return (await self.session.execute(stmt)).scalar_one_or_none() is not None

    async def read_owned(self, uid: str, run_id: str) -> AgentRun | None:
        """:meth:`get_owned` for a reader: one prebuilt statement, the run an entity outside
        the session (nothing of it is written back)."""
        row = await _READ_OWNED.first(self.session, {"run_id": run_id, "uid": uid})
        return None if row is None else run_of(row)

    async def get_owned(self, uid: str, run_id: str) -> AgentRun | None:
        row = await self.session.execute(
            select(AgentRun)
            .where(AgentRun.id == run_id, AgentRun.uid == uid)
            .execution_options(populate_existing=True)
        )
        return row.scalar_one_or_none()

    # -- the lease ----------------------------------------------------------------------------

    async def claim_next(self, *, lease_seconds: float) -> Row[Any] | None:
        """Claim the oldest pending chat/resume run for a fresh ``worker_id``: a row of
        :data:`~yuxi.repositories.runs._lease.CLAIM_COLUMNS`, or ``None``."""
        return await lease.CLAIM_NEXT.first(self.session, lease.claim_params(lease_seconds))

    async def claim(self, run_id: str, *, lease_seconds: float) -> Row[Any] | None:
        """Claim one specific pending run (used by tests and by ``?wait`` fast paths)."""
        params = lease.claim_params(lease_seconds, run_id)
        return await lease.CLAIM_ONE.first(self.session, params)

    async def renew_lease(self, run_id: str, worker_id: str, *, lease_seconds: float) -> bool:
        """Extend the lease; only the owner of an unexpired lease can. False = lease lost."""
        cancel = await self.renew_lease_and_read_cancel(
            run_id, worker_id, lease_seconds=lease_seconds
        )
        return cancel is not None

    async def renew_lease_and_read_cancel(
        self, run_id: str, worker_id: str, *, lease_seconds: float
    ) -> bool | None:
        """Extend the lease and return the run's cancel request, in one statement.

        ``None`` = the lease is lost (not renewed); otherwise whether a cancel was requested.
        """
        stmt = lease.renew(run_id, worker_id, lease_seconds)
        row = (await self.session.execute(stmt)).one_or_none()
        return None if row is None else bool(row.cancel_requested)

    async def lock_live_lease(self, run_id: str, worker_id: str) -> bool:
        """``SELECT … FOR SHARE`` the run if ``worker_id`` owns a live lease on it.

        Held to the end of the caller's transaction, so neither reconciliation nor another
        claim can change the lease under the writes made in it. False = the lease is lost.
        """
        params = {"run_id": run_id, "worker_id": worker_id}
        return await _LOCK_LIVE_LEASE.first(self.session, params) is not None

    async def reconcile_expired(self, *, limit: int = 100) -> list[str]:
        """Fail every running run whose lease ran out (by the database clock), then every
        SubAgent run orphaned by a parent that is over."""
        failed = await self.fail_expired_leases(limit=limit)
        return failed + await self.fail_orphaned_subagents(limit=limit)

    async def fail_expired_leases(self, *, limit: int = 100) -> list[str]:
        """Fail running top-level runs whose lease ran out, as :data:`LEASE_EXPIRED`."""
        return list((await self.session.execute(lease.fail_expired(limit))).scalars())

    async def fail_orphaned_subagents(self, *, limit: int = 100) -> list[str]:
        """A SubAgent run executes inside its parent's worker; if the parent is over (its
        worker died mid-delegation), the child can never finish: fail it as
        :data:`PARENT_RUN_ENDED`."""
        stmt = lease.fail_orphaned_subagents(limit)
        return list((await self.session.execute(stmt)).scalars())

    async def finish_subagent(
        self, run_id: str, *, status: str, output: dict[str, Any] | None
    ) -> bool:
        """Settle a running SubAgent run (it holds no lease: its parent's worker runs it).
        False = it was already settled (e.g. failed as orphaned by reconciliation)."""
        if status not in SETTLED_RUN_STATUSES:
            raise ValueError(f"not a terminal status: {status}")
        stmt = (
            update(AgentRun)
            .where(
                AgentRun.id == run_id,
                AgentRun.run_type == "subagent",
                AgentRun.status == "running",
            )
            .values(status=status, finished_at=func.now(), output=output)
            .returning(AgentRun.id)
        )
        return (await self.session.execute(stmt)).scalar_one_or_none() is not None

    async def request_cancel(self, uid: str, run_id: str) -> bool:
        stmt = (
            update(AgentRun)
            .where(
                AgentRun.id == run_id,
                AgentRun.uid == uid,
                AgentRun.status.in_(("pending", "running")),
            )
            .values(cancel_requested=True)
            .returning(AgentRun.id)
        )
        if requested := (await self.session.execute(stmt)).scalar_one_or_none() is not None:
            await self.session.execute(notify(RUN_CANCEL, run_id))  # its worker beats at once
        return requested

    # -- the memory write gate ----------------------------------------------------------------

    async def lock_user_memory(self, uid: str) -> None:
        """The per-uid memory lock every MEMORY.md writer takes; released at transaction end."""
        await self.session.execute(lock_user_memory(uid))

    # -- listing (added for the thread view; kept at the end for an easy merge) ----------------

    async def list_for_thread(self, uid: str, thread_id: str) -> list[AgentRun]:
        """The user's runs on one thread (every run type), oldest first."""
        rows = await self.session.execute(
            select(AgentRun)
            .where(AgentRun.uid == uid, AgentRun.conversation_thread_id == thread_id)
            .order_by(AgentRun.created_at, AgentRun.id)
        )
        return list(rows.scalars())
