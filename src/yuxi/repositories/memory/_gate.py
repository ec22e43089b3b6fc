"""The memory write gate: the per-uid lock, the run's lease and quota, the switch — one statement.

:class:`MemoryGate` (``uow.memory_gate`` of a :class:`~yuxi.services.unit_of_work.UnitOfWork`)
runs :data:`GATE` in the unit of work's transaction, in one round trip:

1. ``pg_advisory_xact_lock(hashtextextended('user-memory:' || uid, 0))`` as an uncorrelated
   sub-select in ``WHERE``: PostgreSQL evaluates it as a one-time filter *before* the scan, so
   the advisory lock is taken before any row of the statement is read or locked (the same
   order as separate statements would take them), and held until the transaction ends;
2. ``SELECT … FOR UPDATE`` of the AgentRun: its lease and quota cannot change under the write;
   a row changed while this statement waited for the lock is re-read at its newest version;
3. the memory switch, ``FOR SHARE`` in a sub-select: a switch turned off while this statement
   waited is seen (its row changed, so it is re-read), and turning it off waits for this write's
   transaction to end. No ``user_config`` row reads as off (fail closed);
4. the thread's source (an evaluation thread may read memory but never change it) and status
   (a deleted thread's runs never write memory: a thread deleted with its memory stays
   forgotten, design.md §10.6).

:func:`authorize` turns the row into the gate's answer (the lease is judged by the database
clock, ``now()``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, String, bindparam, func, literal, select
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.db.models import AgentRun, Conversation, UserConfig
from yuxi.db.prebuilt import PrebuiltStatement
from yuxi.identity import RunIdentity
from yuxi.vocabulary import MEMORY_READ_ONLY_SOURCES, MEMORY_WRITE_RUN_TYPES

__all__ = [
    "GATE",
    "MemoryGate",
    "MemoryWriteAuthorization",
    "authorize",
    "lock_user_memory",
]


@dataclass(frozen=True)
class MemoryWriteAuthorization:
    """The gate's answer; when ``ok``, also the run's memory write quota used so far (read
    under the same ``FOR UPDATE``, so it cannot change before this transaction ends)."""

    ok: bool
    reason: str = ""
    memory_writes: int = 0
    memory_write_bytes: int = 0
    #: The run's thread may read memory but never change it (an evaluation).
    read_only: bool = False
    #: The user's memory switch, read under the lock (a user without a config row: off).
    memory_enabled: bool = False


def _user_memory_key(uid: Any) -> Any:
    return func.hashtextextended(literal("user-memory:") + uid, 0)


def lock_user_memory(uid: str) -> Select[*tuple[Any, ...]]:
    """The per-uid memory lock every MEMORY.md writer takes; released at transaction end."""
    return select(func.pg_advisory_xact_lock(_user_memory_key(literal(uid))))


_UID = bindparam("uid", type_=String())
_RUNS, _THREADS, _CONFIGS = AgentRun.__table__.c, Conversation.__table__.c, UserConfig.__table__.c
#: Built once, from the tables' columns, and run prebuilt (:mod:`yuxi.db.prebuilt`: it is on the
#: hot path of every agent write). See the module docstring for what it locks, in order.
GATE = (
    select(
        _RUNS.uid,
        _RUNS.conversation_thread_id,
        _RUNS.request_id,
        _RUNS.run_type,
        _RUNS.status,
        _RUNS.cancel_requested,
        _RUNS.worker_id,
        (_RUNS.lease_expires_at > func.now()).label("lease_alive"),
        _RUNS.memory_writes,
        _RUNS.memory_write_bytes,
        select(_THREADS.source)
        .where(_THREADS.thread_id == _RUNS.conversation_thread_id)
        .scalar_subquery()
        .label("source"),
        select(_THREADS.status)
        .where(_THREADS.thread_id == _RUNS.conversation_thread_id)
        .scalar_subquery()
        .label("thread_status"),
        select(_CONFIGS.enable_memory)
        .where(_CONFIGS.uid == _UID)
        .with_for_update(read=True)
        .scalar_subquery()
        .label("memory_enabled"),
    )
    .where(
        _RUNS.id == bindparam("run_id", type_=String()),
        select(literal(True))
        .select_from(func.pg_advisory_xact_lock(_user_memory_key(_UID)))
        .scalar_subquery(),
    )
    .with_for_update(of=AgentRun.__table__)
)
_GATE = PrebuiltStatement(GATE)


class MemoryGate:
    """The gate of an agent's memory write, in a unit of work's transaction (never commits)."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def lock(self, identity: RunIdentity) -> MemoryWriteAuthorization:
        """Run :data:`GATE` for ``identity`` and judge its row (:func:`authorize`). The advisory
        lock it takes is held until the unit of work ends, whatever the answer."""
        row = await _GATE.first(self.session, {"uid": identity.uid, "run_id": identity.run_id})
        return authorize(identity, row)


def authorize(identity: RunIdentity, row: Any) -> MemoryWriteAuthorization:
    """The run must be this user's, on this thread and request, a top-level chat/resume run
    of a thread that is not deleted, ``running`` without a cancel request, owned by
    ``worker_id`` with a lease that has not expired by ``now()``."""
    if row is None:
        return MemoryWriteAuthorization(False, "run not found")
    checks = (
        (row.uid == identity.uid, "run belongs to another user"),
        (row.conversation_thread_id == identity.thread_id, "run belongs to another thread"),
        (row.request_id == identity.request_id, "run belongs to another request"),
        (row.run_type in MEMORY_WRITE_RUN_TYPES, f"{row.run_type} runs may not write memory"),
        (row.thread_status != "deleted", "the run's thread was deleted"),
        (row.status == "running", f"run is {row.status}, not running"),
        (not row.cancel_requested, "run has a cancel request"),
        (
            row.worker_id is not None and row.worker_id == identity.worker_id,
            "worker does not own run",
        ),
        (bool(row.lease_alive), "the run's lease has expired"),
    )
    for ok, reason in checks:
        if not ok:
            return MemoryWriteAuthorization(False, reason)
    return MemoryWriteAuthorization(
        True,
        "",
        row.memory_writes,
        row.memory_write_bytes,
        read_only=row.source in MEMORY_READ_ONLY_SOURCES,
        memory_enabled=bool(row.memory_enabled),
    )
