"""The statements of the AgentRun lease, for :class:`AgentRunRepository` to execute.

Every check of "is this lease still alive?" is :func:`owned_live_lease`, made **by the database
clock** (``now()``), never the app's: app servers' clocks drift, the database is the one clock
every worker shares.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Interval,
    String,
    Table,
    Update,
    and_,
    bindparam,
    exists,
    false,
    func,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.orm import aliased

from yuxi.db.models import AgentRun, UserConfig
from yuxi.db.prebuilt import PrebuiltStatement
from yuxi.repositories.runs.tool_call_repository import open_in_thread
from yuxi.vocabulary import (
    CLAIMABLE_RUN_TYPES,
    LEASE_EXPIRED,
    PARENT_RUN_ENDED,
    SETTLED_RUN_STATUSES,
)


def new_worker_id() -> str:
    """A token unique to one claim attempt (never reused, not guessable)."""
    return "w_" + secrets.token_hex(16)


def owned_live_lease(run_id: Any, worker_id: Any) -> ColumnElement[bool]:
    """THE "this worker still owns a live lease on the run" condition over ``agent_runs``.

    Every lease-fenced statement (renew, finish, the record fence, the fenced event append)
    uses this one expression; nothing restates it. ``run_id`` and ``worker_id`` are values, or
    bind parameters of a statement built once.
    """
    return and_(
        AgentRun.id == run_id,
        AgentRun.worker_id == worker_id,
        AgentRun.status == "running",
        AgentRun.lease_expires_at > func.now(),
    )


def _lease_end(lease_seconds: float) -> Any:
    return func.now() + timedelta(seconds=lease_seconds)


_TABLE = cast(Table, AgentRun.__table__)
_RUNS = _TABLE.c


def _claimable(runs: Any = _RUNS) -> ColumnElement[bool]:
    """A pending chat/resume run: what a worker may claim.

    The values are SQL literals, not bind parameters: a prepared statement's generic plan can
    use the partial index ``ix_agent_runs_claimable`` (``WHERE status = 'pending'``) only when
    the statement says ``'pending'`` itself."""
    types = or_(*(runs.run_type == literal_column(f"'{t}'") for t in CLAIMABLE_RUN_TYPES))
    return and_(runs.status == literal_column("'pending'"), types)


def _oldest_pending() -> Any:
    """The oldest pending chat/resume run; ``FOR UPDATE SKIP LOCKED`` lets many workers claim
    concurrently without blocking on or double-claiming the same row."""
    return (
        select(_RUNS.id)
        .where(_claimable())
        .order_by(_RUNS.created_at, _RUNS.id)
        .limit(1)
        .with_for_update(skip_locked=True)
        .scalar_subquery()
    )


def _pending() -> Any:
    """The pending run ``b_candidate``, skipped if another worker is claiming it."""
    return (
        select(_RUNS.id)
        .where(_RUNS.id == bindparam("b_candidate", type_=String), _RUNS.status == "pending")
        .with_for_update(skip_locked=True)
        .scalar_subquery()
    )


#: What a claim returns: what executing the run needs (:func:`~yuxi.services.runs._records.
#: claimed_run`); ``more_pending`` — whether another claimable run was pending when this
#: one was claimed (the statement's snapshot; rows other workers are claiming count too). A
#: worker looks again at once only then; otherwise it waits for the next pending-run
#: notification, so a run costs one claim, not a claim plus an empty one; and
#: ``memory_enabled`` — the owner's memory switch as the run starts, the one answer the run
#: is assembled for (design.md §2), read in the same statement.
CLAIM_COLUMNS = (
    "id",
    "uid",
    "conversation_thread_id",
    "request_id",
    "worker_id",
    "run_type",
    "input_payload",
    "attempt",
    "created_by_run_id",
    "more_pending",
    "memory_enabled",
    "previous_status",
    "previous_error_code",
    "open_calls",
)


def _previous_run() -> tuple[Any, ...]:
    """How the claimed run's thread's previous run ended — the newest other chat/resume run's
    ``previous_status`` and ``previous_error_code`` (NULL: none) — and whether the thread has
    tool calls still open (``open_calls``), read by the claim: the run starts from them (a chat
    run answers the calls an earlier run left open). They cannot change once the run is
    claimed: the thread's other top-level runs are settled (one active run per thread), and a
    settled run's worker can no longer write (its steps are fenced by its lease)."""
    previous = _TABLE.alias("previous")
    types = or_(*(previous.c.run_type == literal_column(f"'{t}'") for t in CLAIMABLE_RUN_TYPES))

    def newest(column: Any) -> Any:
        return (
            select(column)
            .where(
                previous.c.conversation_thread_id == _RUNS.conversation_thread_id,
                previous.c.id != _RUNS.id,
                types,
            )
            .order_by(previous.c.created_at.desc(), previous.c.id.desc())
            .limit(1)
            .scalar_subquery()
        )

    return (
        newest(previous.c.status).label("previous_status"),
        newest(previous.c.error_code).label("previous_error_code"),
        exists().where(open_in_thread(_RUNS.uid, _RUNS.conversation_thread_id)).label("open_calls"),
    )


def _claim(candidate: Any) -> PrebuiltStatement:
    """Start the candidate run for the worker token ``b_worker`` with a lease of ``b_lease``,
    in one statement on the table (no ORM entity), run prebuilt. Parameter names differ from
    the columns' (SQLAlchemy keeps those for its own SET values)."""
    other = _TABLE.alias("other")
    config = cast(Table, UserConfig.__table__).c
    _switch = select(config.enable_memory).where(config.uid == _RUNS.uid).scalar_subquery()
    others = select(other.c.id).where(_claimable(other.c), other.c.id != _RUNS.id).limit(1)
    return PrebuiltStatement(
        update(_TABLE)
        .where(_RUNS.id == candidate)
        .values(
            status="running",
            worker_id=bindparam("b_worker", type_=String),
            attempt=_RUNS.attempt + 1,
            heartbeat_at=func.now(),
            lease_expires_at=func.now() + bindparam("b_lease", type_=Interval),
            started_at=func.coalesce(_RUNS.started_at, func.now()),
        )
        .returning(
            *(_RUNS[name] for name in CLAIM_COLUMNS[:-5]),
            exists(others).label("more_pending"),
            func.coalesce(_switch, false()).label("memory_enabled"),
            *_previous_run(),
        )
    )


#: Claim the oldest pending chat/resume run; claim the pending run ``b_candidate``.
CLAIM_NEXT = _claim(_oldest_pending())
CLAIM_ONE = _claim(_pending())


def claim_params(lease_seconds: float, candidate: str | None = None) -> dict[str, Any]:
    """The parameters of :data:`CLAIM_NEXT` (or, with ``candidate``, :data:`CLAIM_ONE`): a
    fresh worker token and the lease's length."""
    params: dict[str, Any] = {
        "b_worker": new_worker_id(),
        "b_lease": timedelta(seconds=lease_seconds),
    }
    if candidate is not None:
        params["b_candidate"] = candidate
    return params


def renew(run_id: str, worker_id: str, lease_seconds: float) -> Update:
    """Extend an owned live lease. ``RETURNING`` the run's cancel request."""
    return (
        update(AgentRun)
        .where(owned_live_lease(run_id, worker_id))
        .values(heartbeat_at=func.now(), lease_expires_at=_lease_end(lease_seconds))
        .returning(AgentRun.cancel_requested)
    )


def fail_expired(limit: int) -> Update:
    """Fail running top-level runs whose lease ran out. ``RETURNING`` their ids."""
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
    return (
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


def fail_orphaned_subagents(limit: int) -> Update:
    """Fail running SubAgent runs whose parent run is settled. ``RETURNING`` their ids."""
    parent = aliased(AgentRun)
    orphaned = (
        select(AgentRun.id)
        .join(parent, parent.id == AgentRun.created_by_run_id)
        .where(
            AgentRun.run_type == "subagent",
            AgentRun.status == "running",
            parent.status.in_(SETTLED_RUN_STATUSES),
        )
        .limit(limit)
        .with_for_update(of=AgentRun, skip_locked=True)
    )
    return (
        update(AgentRun)
        .where(AgentRun.id.in_(orphaned.scalar_subquery()))
        .values(
            status="failed",
            finished_at=func.now(),
            error_code=PARENT_RUN_ENDED,
            error_message="the parent run ended before the SubAgent finished",
        )
        .returning(AgentRun.id)
    )
