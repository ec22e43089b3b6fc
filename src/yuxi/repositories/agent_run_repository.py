"""AgentRun persistence and the PostgreSQL lease: the source of trusted execution identity.

A run is claimed by exactly one worker at a time. Each claim writes a fresh ``worker_id`` token and
a lease that ends at ``lease_expires_at``; the owner renews it with heartbeats. Every check of
"is this lease still alive?" is made **by the database clock** (``now()``), never the app's: app
servers' clocks drift, the database is the one clock every worker shares.

Never commits: the service that calls it owns the transaction. ``now()`` is the transaction start
time, so callers keep lease transactions short.
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import and_, func, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from yuxi.db.models import AgentRun
from yuxi.errors import ActiveRunExists, Conflict
from yuxi.identity import RunIdentity

TERMINAL_STATUSES = ("completed", "failed", "cancelled", "interrupted")
CLAIMABLE_RUN_TYPES = ("chat", "resume")
MEMORY_WRITE_RUN_TYPES = ("chat", "resume")
LEASE_EXPIRED = "worker_lease_expired"


_USER_MEMORY_LOCK = text(
    "SELECT pg_advisory_xact_lock(hashtextextended('user-memory:' || :uid, 0))"
)


def new_worker_id() -> str:
    """A token unique to one claim attempt (never reused, not guessable)."""
    return "w_" + secrets.token_hex(16)


@dataclass(frozen=True)
class MemoryWriteAuthorization:
    ok: bool
    reason: str = ""


class AgentRunRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    # -- creation -----------------------------------------------------------------------------

    async def create_run(
        self,
        *,
        uid: str,
        thread_id: str,
        request_id: str,
        run_type: str,
        input_payload: dict[str, Any] | None = None,
        created_by_run_id: str | None = None,
        status: str = "pending",
    ) -> tuple[AgentRun, bool]:
        """Insert a run, idempotent on ``(uid, request_id)``. Returns ``(run, created)``.

        A retried request gets the run it created the first time (if the retry names another
        thread, that is a conflict). A second active run on the same thread is refused by the
        partial unique index and surfaces as :class:`ActiveRunExists`.
        """
        run_id = str(uuid.uuid4())
        stmt = (
            insert(AgentRun)
            .values(
                id=run_id,
                uid=uid,
                conversation_thread_id=thread_id,
                request_id=request_id,
                run_type=run_type,
                status=status,
                input_payload=input_payload or {},
                created_by_run_id=created_by_run_id,
            )
            .on_conflict_do_nothing(index_elements=[AgentRun.uid, AgentRun.request_id])
            .returning(AgentRun.id)
        )
        try:
            async with self.session.begin_nested():
                inserted = (await self.session.execute(stmt)).scalar_one_or_none()
        except IntegrityError as exc:
            if "uq_agent_runs_one_active_per_thread" in str(exc.orig):
                raise ActiveRunExists("this thread already has an active run") from exc
            raise
        if inserted is not None:
            run = await self.session.get(AgentRun, inserted, populate_existing=True)
            assert run is not None
            return run, True
        existing = (
            await self.session.execute(
                select(AgentRun).where(AgentRun.uid == uid, AgentRun.request_id == request_id)
            )
        ).scalar_one()
        if existing.conversation_thread_id != thread_id:
            raise Conflict("request_id was already used for another thread")
        return existing, False

    async def get(self, run_id: str) -> AgentRun | None:
        return await self.session.get(AgentRun, run_id, populate_existing=True)

    async def get_by_request(self, uid: str, request_id: str) -> AgentRun | None:
        row = await self.session.execute(
            select(AgentRun).where(AgentRun.uid == uid, AgentRun.request_id == request_id)
        )
        return row.scalar_one_or_none()

    async def awaiting_approval(self, thread_id: str) -> bool:
        """Whether the thread's latest top-level run is interrupted with no decision yet."""
        latest = (
            await self.session.execute(
                select(AgentRun.status)
                .where(
                    AgentRun.conversation_thread_id == thread_id,
                    AgentRun.run_type.in_(CLAIMABLE_RUN_TYPES),
                )
                .order_by(AgentRun.created_at.desc(), AgentRun.id.desc())
                .limit(1)
            )
        ).scalar_one_or_none()
        return latest == "interrupted"

    async def cancel_pending(self, run_id: str) -> bool:
        stmt = (
            update(AgentRun)
            .where(AgentRun.id == run_id, AgentRun.status == "pending")
            .values(status="cancelled", finished_at=func.now(), cancel_requested=True)
            .returning(AgentRun.id)
        )
        return (await self.session.execute(stmt)).scalar_one_or_none() is not None

    async def get_owned(self, uid: str, run_id: str) -> AgentRun | None:
        row = await self.session.execute(
            select(AgentRun)
            .where(AgentRun.id == run_id, AgentRun.uid == uid)
            .execution_options(populate_existing=True)
        )
        return row.scalar_one_or_none()

    # -- the lease ----------------------------------------------------------------------------

    async def claim_next(self, *, lease_seconds: float) -> AgentRun | None:
        """Claim the oldest pending chat/resume run for a fresh ``worker_id``.

        ``FOR UPDATE SKIP LOCKED`` lets many workers claim concurrently without blocking on or
        double-claiming the same row.
        """
        candidate = (
            select(AgentRun.id)
            .where(AgentRun.status == "pending", AgentRun.run_type.in_(CLAIMABLE_RUN_TYPES))
            .order_by(AgentRun.created_at, AgentRun.id)
            .limit(1)
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
        return await self._claim(candidate, lease_seconds)

    async def claim(self, run_id: str, *, lease_seconds: float) -> AgentRun | None:
        """Claim one specific pending run (used by tests and by ``?wait`` fast paths)."""
        candidate = (
            select(AgentRun.id)
            .where(AgentRun.id == run_id, AgentRun.status == "pending")
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
        return await self._claim(candidate, lease_seconds)

    async def _claim(self, candidate: Any, lease_seconds: float) -> AgentRun | None:
        stmt = (
            update(AgentRun)
            .where(AgentRun.id == candidate)
            .values(
                status="running",
                worker_id=new_worker_id(),
                attempt=AgentRun.attempt + 1,
                heartbeat_at=func.now(),
                lease_expires_at=func.now() + timedelta(seconds=lease_seconds),
                started_at=func.coalesce(AgentRun.started_at, func.now()),
            )
            .returning(AgentRun.id)
        )
        claimed = (await self.session.execute(stmt)).scalar_one_or_none()
        if claimed is None:
            return None
        return await self.get(claimed)

    def _owned_alive(self, run_id: str, worker_id: str) -> Any:
        return and_(
            AgentRun.id == run_id,
            AgentRun.worker_id == worker_id,
            AgentRun.status == "running",
            AgentRun.lease_expires_at > func.now(),
        )

    async def renew_lease(self, run_id: str, worker_id: str, *, lease_seconds: float) -> bool:
        """Extend the lease; only the owner of an unexpired lease can. False = lease lost."""
        stmt = (
            update(AgentRun)
            .where(self._owned_alive(run_id, worker_id))
            .values(
                heartbeat_at=func.now(),
                lease_expires_at=func.now() + timedelta(seconds=lease_seconds),
            )
            .returning(AgentRun.id)
        )
        return (await self.session.execute(stmt)).scalar_one_or_none() is not None

    async def finish(
        self,
        run_id: str,
        worker_id: str,
        *,
        status: str,
        error_code: str | None = None,
        error_message: str | None = None,
        output: dict[str, Any] | None = None,
    ) -> bool:
        """Move an owned, unexpired, running run to a terminal status. False = not the owner."""
        if status not in TERMINAL_STATUSES:
            raise ValueError(f"not a terminal status: {status}")
        stmt = (
            update(AgentRun)
            .where(self._owned_alive(run_id, worker_id))
            .values(
                status=status,
                finished_at=func.now(),
                error_code=error_code,
                error_message=error_message,
                output=output,
                lease_expires_at=None,
            )
            .returning(AgentRun.id)
        )
        return (await self.session.execute(stmt)).scalar_one_or_none() is not None

    async def reconcile_expired(self, *, limit: int = 100) -> list[str]:
        """Fail every running run whose lease ran out (by the database clock)."""
        expired = (
            select(AgentRun.id)
            .where(
                AgentRun.status == "running",
                AgentRun.run_type.in_(CLAIMABLE_RUN_TYPES),
                AgentRun.lease_expires_at <= func.now(),
            )
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        stmt = (
            update(AgentRun)
            .where(AgentRun.id.in_(expired.scalar_subquery()))
            .values(
                status="failed",
                finished_at=func.now(),
                error_code=LEASE_EXPIRED,
                error_message="the worker's lease expired before the run finished",
            )
            .returning(AgentRun.id)
        )
        failed = list((await self.session.execute(stmt)).scalars())
        return failed + await self._reconcile_orphaned_subagents(limit)

    async def _reconcile_orphaned_subagents(self, limit: int) -> list[str]:
        """A SubAgent run executes inside its parent's worker; if the parent is over (its
        worker died mid-delegation), the child can never finish: fail it too."""
        parent = aliased(AgentRun)
        orphaned = (
            select(AgentRun.id)
            .join(parent, parent.id == AgentRun.created_by_run_id)
            .where(
                AgentRun.run_type == "subagent",
                AgentRun.status == "running",
                parent.status.in_(TERMINAL_STATUSES),
            )
            .limit(limit)
            .with_for_update(of=AgentRun, skip_locked=True)
        )
        stmt = (
            update(AgentRun)
            .where(AgentRun.id.in_(orphaned.scalar_subquery()))
            .values(
                status="failed",
                finished_at=func.now(),
                error_code="parent_run_ended",
                error_message="the parent run ended before the SubAgent finished",
            )
            .returning(AgentRun.id)
        )
        return list((await self.session.execute(stmt)).scalars())

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
        return (await self.session.execute(stmt)).scalar_one_or_none() is not None

    async def record_memory_snapshot(self, run_id: str, *, sha256: str, size: int) -> None:
        await self.session.execute(
            update(AgentRun)
            .where(AgentRun.id == run_id)
            .values(memory_snapshot_sha256=sha256, memory_snapshot_bytes=size)
        )

    # -- the memory write gate ----------------------------------------------------------------

    async def lock_user_memory(self, uid: str) -> None:
        """The per-uid memory lock every MEMORY.md writer takes; released at transaction end."""
        await self.session.execute(_USER_MEMORY_LOCK, {"uid": uid})

    async def lock_memory_write(self, identity: RunIdentity) -> MemoryWriteAuthorization:
        """Take the per-uid memory lock, then lock and check the run that asks to write.

        1. ``pg_advisory_xact_lock(hashtextextended('user-memory:' || uid, 0))`` — held until
           the caller's transaction ends, so every same-uid writer is serialized;
        2. ``SELECT … FOR UPDATE`` of the AgentRun, so its lease cannot change under us;
        3. the run must be this user's, on this thread and request, a top-level chat/resume
           run, ``running`` without a cancel request, owned by ``worker_id`` with a lease that
           has not expired by ``now()``.
        """
        uid, thread_id, run_id = identity.uid, identity.thread_id, identity.run_id
        request_id, worker_id = identity.request_id, identity.worker_id
        await self.lock_user_memory(uid)
        row = (
            await self.session.execute(
                select(
                    AgentRun.uid,
                    AgentRun.conversation_thread_id,
                    AgentRun.request_id,
                    AgentRun.run_type,
                    AgentRun.status,
                    AgentRun.cancel_requested,
                    AgentRun.worker_id,
                    (AgentRun.lease_expires_at > func.now()).label("lease_alive"),
                )
                .where(AgentRun.id == run_id)
                .with_for_update()
            )
        ).one_or_none()
        if row is None:
            return MemoryWriteAuthorization(False, "run not found")
        checks = (
            (row.uid == uid, "run belongs to another user"),
            (row.conversation_thread_id == thread_id, "run belongs to another thread"),
            (row.request_id == request_id, "run belongs to another request"),
            (row.run_type in MEMORY_WRITE_RUN_TYPES, f"{row.run_type} runs may not write memory"),
            (row.status == "running", f"run is {row.status}, not running"),
            (not row.cancel_requested, "run has a cancel request"),
            (row.worker_id is not None and row.worker_id == worker_id, "worker does not own run"),
            (bool(row.lease_alive), "the run's lease has expired"),
        )
        for ok, reason in checks:
            if not ok:
                return MemoryWriteAuthorization(False, reason)
        return MemoryWriteAuthorization(True)
