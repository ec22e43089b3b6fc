"""What the chat service shows its callers: threads, their messages and tool calls, runs.

These frozen dataclasses are also the HTTP API's response bodies (FastAPI serialises them), so
each public shape is defined once, here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

from yuxi.db.models import AgentRun, Conversation, Message, ToolCall
from yuxi.limits import EVENT_TEXT_BYTES
from yuxi.repositories.runs.run_event_repository import OwnedPage, StreamedEvent
from yuxi.utils.string_utils import truncate_utf8
from yuxi.vocabulary import APPROVAL_DECISIONS, SETTLED_RUN_STATUSES

__all__ = [
    "DecisionView",
    "MemorySnapshotView",
    "MessageSummary",
    "RunErrorView",
    "RunSummary",
    "StreamPage",
    "ThreadDetail",
    "ThreadSummary",
    "ToolCallSummary",
    "recorded_decision",
    "run_view",
    "thread_summary",
]

#: The statuses a stored tool call can have (``yuxi.vocabulary.TOOL_CALL_STATUSES``).
ToolCallStatus = Literal["pending", "success", "error"]


@dataclass(frozen=True)
class ThreadSummary:
    """The public shape of a thread (no messages). ``recall_excluded``: the owner hid it from
    the history tools (``search_thread_messages`` / ``read_thread_messages``)."""

    thread_id: str
    title: str
    status: str
    source: str
    recall_excluded: bool
    created_at: datetime
    updated_at: datetime


def thread_summary(conversation: Conversation) -> ThreadSummary:
    return ThreadSummary(
        thread_id=conversation.thread_id,
        title=conversation.title,
        status=conversation.status,
        source=conversation.source,
        recall_excluded=conversation.recall_excluded,
        created_at=conversation.created_at,
        updated_at=conversation.updated_at,
    )


@dataclass(frozen=True)
class ToolCallSummary:
    """One tool call as its owner sees it in the thread view; ``result`` is the stored output
    cut to ``EVENT_TEXT_BYTES`` (as in the ``tool_end`` event), ``None`` while it has none."""

    tool_call_id: str
    name: str
    args: Any
    status: ToolCallStatus
    result: str | None
    truncated: bool

    @classmethod
    def of(cls, row: ToolCall) -> ToolCallSummary:
        result, truncated = (None, False)
        if row.output is not None:
            result, truncated = truncate_utf8(row.output, EVENT_TEXT_BYTES)
        status = cast(ToolCallStatus, row.status)
        return cls(row.tool_call_id, row.name, row.input, status, result, truncated)


@dataclass(frozen=True)
class MessageSummary:
    """One stored message of a thread; a ``tool_call`` message carries its tool calls."""

    message_id: int
    role: str
    message_type: str
    content: str
    run_id: str | None
    created_at: datetime
    tool_calls: list[ToolCallSummary] = field(default_factory=list)

    @classmethod
    def of(cls, row: Message, tool_calls: list[ToolCallSummary]) -> MessageSummary:
        return cls(
            row.id, row.role, row.message_type, row.content, row.run_id, row.created_at, tool_calls
        )


@dataclass(frozen=True)
class DecisionView:
    """The user's decision on an interrupted run (``run_id``): ``approve`` or ``reject``, the
    ``resume`` run it started (``decided_by_run_id``) and that run's status. The transcript
    shows it where the interruption was, after a reload too."""

    run_id: str
    decision: Literal["approve", "reject"]
    decided_by_run_id: str
    status: str
    decided_at: datetime


@dataclass(frozen=True)
class ThreadDetail(ThreadSummary):
    """A thread and its latest messages, chronological: the owner's view, not the model's
    (which is the history lookback's). ``decisions``: the approval decisions on the runs of
    those messages, oldest first."""

    messages: list[MessageSummary]
    decisions: list[DecisionView] = field(default_factory=list)


@dataclass(frozen=True)
class RunErrorView:
    code: str
    message: str | None


@dataclass(frozen=True)
class MemorySnapshotView:
    sha256: str
    size: int | None


@dataclass(frozen=True)
class RunUsageView:
    """Tokens a settled run used, summed over its model calls (zeros when the provider
    reports none)."""

    input_tokens: int
    output_tokens: int
    total_tokens: int
    model_calls: int


def _usage_of(output: dict[str, Any] | None) -> RunUsageView | None:
    usage = (output or {}).get("usage")
    if not isinstance(usage, dict):
        return None
    return RunUsageView(
        **{
            key: int(usage.get(key, 0) or 0)
            for key in ("input_tokens", "output_tokens", "total_tokens", "model_calls")
        }
    )


@dataclass(frozen=True)
class RunSummary:
    """The public shape of a run (API and CLI)."""

    run_id: str
    thread_id: str
    request_id: str
    run_type: str
    status: str
    cancel_requested: bool
    created_by_run_id: str | None
    created_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    error: RunErrorView | None
    output: dict[str, Any] | None
    memory_snapshot: MemorySnapshotView | None
    #: ``None`` until the run settles (and for runs settled before usage was recorded).
    usage: RunUsageView | None
    #: A ``resume`` run's decision (``approve`` / ``reject``) on ``created_by_run_id``;
    #: ``None`` for any other run.
    decision: str | None = None


def run_view(run: AgentRun) -> RunSummary:
    return RunSummary(
        run_id=run.id,
        thread_id=run.conversation_thread_id,
        request_id=run.request_id,
        run_type=run.run_type,
        status=run.status,
        cancel_requested=run.cancel_requested,
        created_by_run_id=run.created_by_run_id,
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
        error=None if run.error_code is None else RunErrorView(run.error_code, run.error_message),
        output=run.output,
        memory_snapshot=None
        if run.memory_snapshot_sha256 is None
        else MemorySnapshotView(run.memory_snapshot_sha256, run.memory_snapshot_bytes),
        usage=_usage_of(run.output),
        decision=recorded_decision(run),
    )


def recorded_decision(run: AgentRun) -> str | None:
    """The decision a ``resume`` run carries (``None`` for any other run)."""
    if run.run_type != "resume":
        return None
    decision = (run.input_payload or {}).get("decision")
    return decision if decision in APPROVAL_DECISIONS else None


@dataclass(frozen=True)
class StreamPage:
    """What a run's event stream sends next: ``events`` in order; ``settled`` when the run had
    settled before they were read (so none is left to wait for); ``more`` when the page was
    full (read again at once); ``token_left`` the seconds the stream's token has left (``inf``:
    no expiry; None: it no longer authenticates the user, or no token was given)."""

    events: list[StreamedEvent]
    settled: bool
    more: bool
    token_left: float | None = None

    @classmethod
    def of(cls, page: OwnedPage, limit: int) -> StreamPage:
        """The page a stream sends from what its read found (at most ``limit`` events)."""
        return cls(
            events=page.events,
            settled=page.status in SETTLED_RUN_STATUSES,
            more=len(page.events) >= limit,
            token_left=page.token_left,
        )
