"""The memory write gate: the per-uid lock, the run's lease and quota, the switch — one statement.

:data:`GATE` is what :func:`lock_memory_write` executes (with :func:`gate_params`), in one round
trip on the unit of work's driver connection (``DriverUnitOfWork.lock_memory_write``):

1. ``pg_advisory_xact_lock(hashtextextended('user-memory:' || uid, 0))`` as an uncorrelated
   sub-select in ``WHERE``: PostgreSQL evaluates it as a one-time filter *before* the scan, so
   the advisory lock is taken before any row of the statement is read or locked (the same
   order as the separate statements it replaces), and held until the caller's transaction ends;
2. ``SELECT … FOR UPDATE`` of the AgentRun: its lease and quota cannot change under the write;
   a row changed while this statement waited for the lock is re-read at its newest version;
3. the memory switch, ``FOR SHARE`` in a sub-select: a switch turned off while this statement
   waited is seen (its row changed, so it is re-read), and turning it off waits for this write's
   transaction to end. No ``user_config`` row reads as off (fail closed);
4. the thread's source (an evaluation thread may read memory but never change it).

:func:`authorize` turns the row into the gate's answer (the lease is judged by the database
clock, ``now()``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, String, bindparam, func, literal, select

from yuxi.db.driver_statements import DriverStatement, Executor
from yuxi.db.models import AgentRun, Conversation, UserConfig
from yuxi.identity import RunIdentity
from yuxi.vocabulary import MEMORY_READ_ONLY_SOURCES, MEMORY_WRITE_RUN_TYPES

__all__ = [
    "GATE",
    "MemoryWriteAuthorization",
    "authorize",
    "gate_params",
    "lock_memory_write",
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
#: Built once (the write path runs it on every agent write); bound per call by
#: :func:`gate_params`. See the module docstring for what it locks, in order.
GATE = DriverStatement(
    select(
        AgentRun.uid,
        AgentRun.conversation_thread_id,
        AgentRun.request_id,
        AgentRun.run_type,
        AgentRun.status,
        AgentRun.cancel_requested,
        AgentRun.worker_id,
        (AgentRun.lease_expires_at > func.now()).label("lease_alive"),
        AgentRun.memory_writes,
        AgentRun.memory_write_bytes,
        select(Conversation.source)
        .where(Conversation.thread_id == AgentRun.conversation_thread_id)
        .scalar_subquery()
        .label("source"),
        select(UserConfig.enable_memory)
        .where(UserConfig.uid == _UID)
        .with_for_update(read=True)
        .scalar_subquery()
        .label("memory_enabled"),
    )
    .where(
        AgentRun.id == bindparam("run_id", type_=String()),
        select(literal(True))
        .select_from(func.pg_advisory_xact_lock(_user_memory_key(_UID)))
        .scalar_subquery(),
    )
    .with_for_update(of=AgentRun)
)


def gate_params(identity: RunIdentity) -> dict[str, str]:
    """:data:`GATE`'s parameters for ``identity``."""
    return {"uid": identity.uid, "run_id": identity.run_id}


async def lock_memory_write(executor: Executor, identity: RunIdentity) -> MemoryWriteAuthorization:
    """Run the gate in ``executor``'s transaction and judge its row (:func:`authorize`)."""
    return authorize(identity, await GATE.first(executor, gate_params(identity)))


def authorize(identity: RunIdentity, row: Any) -> MemoryWriteAuthorization:
    """The run must be this user's, on this thread and request, a top-level chat/resume run,
    ``running`` without a cancel request, owned by ``worker_id`` with a lease that has not
    expired by ``now()``."""
    if row is None:
        return MemoryWriteAuthorization(False, "run not found")
    checks = (
        (row.uid == identity.uid, "run belongs to another user"),
        (row.conversation_thread_id == identity.thread_id, "run belongs to another thread"),
        (row.request_id == identity.request_id, "run belongs to another request"),
        (row.run_type in MEMORY_WRITE_RUN_TYPES, f"{row.run_type} runs may not write memory"),
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
