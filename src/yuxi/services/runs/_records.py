"""What the run service hands out and takes in: claims, heartbeats, proposed calls, outcomes.

Plain values (no session, no ORM object escapes): :mod:`yuxi.services.runs.service` re-exports
them as its public surface.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from yuxi.identity import RunIdentity

__all__ = [
    "ClaimedRun",
    "Heartbeat",
    "LeaseLost",
    "PreviousRun",
    "ProposedToolCall",
    "ReconciledRun",
    "ToolOutcome",
    "claimed_run",
    "not_completed",
]


class LeaseLost(Exception):
    """This worker no longer owns the run (its lease expired, was reconciled or taken over)."""


@dataclass(frozen=True)
class PreviousRun:
    """How a chat run's thread's previous chat/resume run ended, and whether the thread has
    tool calls still open (an earlier run was cancelled, failed or lost its lease between a
    call and its result), as the claim read them."""

    status: str
    error_code: str | None
    open_calls: bool

    @property
    def why(self) -> str | None:
        """What the calls that run left open are told — None when it completed: a completed
        run's graph answered every call it made (its limits fail a run rather than end it
        early), so nothing of it is left open, in the records or in the checkpoint."""
        return None if self.status == "completed" else not_completed(self.status, self.error_code)


@dataclass(frozen=True)
class ClaimedRun:
    """A run this worker has just claimed: its identity plus what executing it needs."""

    identity: RunIdentity
    run_type: str
    input_payload: dict[str, Any]
    attempt: int
    created_by_run_id: str | None
    #: Whether another claimable run was pending when this one was claimed: the worker then
    #: looks again at once (otherwise it waits for the next pending-run notification).
    more_pending: bool = False
    #: The owner's memory switch as the claim that starts the run read it: the run is
    #: assembled for this answer (design.md §2).
    memory_enabled: bool = False
    #: A chat run's thread's previous run (None: there is none, or this is not a chat run).
    previous: PreviousRun | None = None


@dataclass(frozen=True)
class Heartbeat:
    """One heartbeat: whether the lease was renewed, and whether a cancel was requested."""

    alive: bool
    cancel_requested: bool


@dataclass(frozen=True)
class ReconciledRun:
    run_id: str
    error_code: str  # LEASE_EXPIRED or PARENT_RUN_ENDED


@dataclass(frozen=True)
class ProposedToolCall:
    """One tool call the model asked for."""

    tool_call_id: str
    name: str
    args: Any


@dataclass(frozen=True)
class ToolOutcome:
    """A tool's result as the agent saw it; ``status`` is ``"success"`` or ``"error"``."""

    tool_call_id: str
    name: str
    content: str
    status: str


def claimed_run(row: Any) -> ClaimedRun:
    """The claim's returned row (:data:`~yuxi.repositories.runs._lease.CLAIM_COLUMNS`)."""
    assert row.worker_id is not None, "a claimed run has a worker"
    return ClaimedRun(
        identity=RunIdentity(
            uid=row.uid,
            thread_id=row.conversation_thread_id,
            run_id=row.id,
            request_id=row.request_id,
            worker_id=row.worker_id,
        ),
        run_type=row.run_type,
        input_payload=dict(row.input_payload or {}),
        attempt=row.attempt,
        created_by_run_id=row.created_by_run_id,
        more_pending=bool(row.more_pending),
        memory_enabled=bool(row.memory_enabled),
        previous=(
            PreviousRun(row.previous_status, row.previous_error_code, bool(row.open_calls))
            if row.run_type == "chat" and row.previous_status is not None
            else None
        ),
    )


def not_completed(status: str, error_code: str | None) -> str:
    """What a caller is told about a tool call whose run ended before it did."""
    how = f"{status} ({error_code})" if error_code else status
    return (
        f"Not completed: the run ended ({how}) before this call finished. "
        "Nothing more will happen for it."
    )
