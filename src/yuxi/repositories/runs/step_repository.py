"""A step of a run's record, written in one lease-fenced statement (:mod:`._step`).

:class:`StepWrites` collects what one step writes — messages, tool-call rows, the thread's open
calls closed, the run's snapshot or end, events — in the order the step made them;
:meth:`RunStepRepository.record` sends them as one statement. The statement's parts share one
snapshot and do not see each other's rows, so :meth:`StepWrites.parameters` folds what a
sequence of statements would have done in turn: a call finished in the step that proposes it is
inserted finished, and a call proposed in a step that closes the thread's open calls is
inserted closed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.repositories.runs._step import StepShape, step_statement
from yuxi.vocabulary import SETTLED_RUN_STATUSES

__all__ = [
    "RunStepRepository",
    "StepResult",
    "StepShape",
    "StepWrites",
    "step_statement",
]


class StepResult(NamedTuple):
    """What the statement found. ``fenced`` false: the worker's lease is gone; ``threaded``
    false: the run's thread is gone — either way nothing was written."""

    fenced: bool
    threaded: bool
    #: With an end: the run's row settled (the fence held, so it is whenever both above are).
    ended: bool


@dataclass
class StepWrites:
    """The writes of one step, in the order made (see the module docstring)."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    new_calls: list[dict[str, Any]] = field(default_factory=list)
    #: The calls finished, by tool-call id: a later finish of the same id replaces an earlier.
    finished: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    close_error: str | None = None
    snapshot: tuple[str, int] | None = None
    end: dict[str, Any] | None = None

    def message(
        self, role: str, content: str, message_type: str, metadata: dict[str, Any] | None
    ) -> int:
        """A message appended to the run's thread; its ordinal in the step (from 1)."""
        self.messages.append(
            {
                "role": role,
                "message_type": message_type,
                "content": content,
                "metadata": dict(metadata or {}),
            }
        )
        return len(self.messages)

    def new_call(self, message: int, tool_call_id: str, name: str, input: Any) -> None:
        """A pending tool-call row on the step's message ``message``."""
        self.new_calls.append(
            {
                "message": message,
                "tool_call_id": tool_call_id,
                "name": name,
                "input": input,
                "status": "pending",
                "output": None,
                "error": None,
            }
        )

    def finish_call(self, tool_call_id: str, status: str, output: str, error: str | None) -> None:
        """The newest row of ``tool_call_id`` in the thread finished (even one an earlier run
        proposed)."""
        self.finished[tool_call_id] = {
            "tool_call_id": tool_call_id,
            "status": status,
            "output": output,
            "error": error,
        }

    def close_open_calls(self, error: str) -> None:
        """The thread's calls still pending once the step's other writes are made, closed."""
        self.close_error = error

    def event(self, event_type: str, data: dict[str, Any], *, message: int | None = None) -> None:
        """The run's next event; with ``message`` (an ordinal of :meth:`message`), its data
        carries that message's id as ``message_id``."""
        event: dict[str, Any] = {"type": event_type, "data": data}
        if message is not None:
            event["message"] = message
        self.events.append(event)

    def parameters(self) -> tuple[StepShape, dict[str, Any]]:
        """The statement's shape and its parameters (without the run's and thread's)."""
        new_calls = [dict(call) for call in self.new_calls]
        finished = dict(self.finished)
        for call in reversed(new_calls):  # the newest row of an id is this step's last
            done = finished.pop(call["tool_call_id"], None)
            if done is not None:
                call.update(status=done["status"], output=done["output"], error=done["error"])
        if self.close_error is not None:
            for call in new_calls:
                if call["status"] == "pending":
                    call.update(status="error", output=self.close_error, error=self.close_error)
        shape = StepShape(
            messages=bool(self.messages),
            new_calls=bool(new_calls),
            finished_calls=bool(finished),
            closes_calls=self.close_error is not None,
            snapshot=self.snapshot is not None,
            finishes=self.end is not None,
        )
        params: dict[str, Any] = {"events": self.events}
        if self.messages:
            params["messages"] = self.messages
        if new_calls:
            params["new_calls"] = new_calls
        if finished:
            params["finished_calls"] = list(finished.values())
        if self.close_error is not None:
            params["close_error"] = self.close_error
        if self.snapshot is not None:
            params["b_sha256"], params["b_size"] = self.snapshot
        if self.end is not None:
            params.update(self.end)
        return shape, params

    def settle(
        self,
        status: str,
        *,
        output: dict[str, Any] | None,
        error_code: str | None,
        error_message: str | None,
    ) -> None:
        """The run's end: its row moved to ``status``, its lease cleared."""
        if status not in SETTLED_RUN_STATUSES:
            raise ValueError(f"not a terminal status: {status}")
        self.end = {
            "b_status": status,
            "b_output": output,
            "b_error_code": error_code,
            "b_error_message": error_message,
        }


class RunStepRepository:
    """Writes a step of a run's record; never commits (the statement is the transaction of a
    one-statement unit of work)."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def record(
        self, run_id: str, worker_id: str, uid: str, thread_id: str, writes: StepWrites
    ) -> StepResult:
        """Write ``writes`` for the run, fenced by ``worker_id``'s live lease, in one
        statement: all of them, or none (lease lost, thread gone)."""
        shape, params = writes.parameters()
        params.update(run_id=run_id, worker_id=worker_id, uid=uid, thread_id=thread_id)
        row = await step_statement(shape).one(self.session, params)
        threaded = bool(row.threaded) if shape.messages else True
        ended = bool(row.ended) if shape.finishes else False
        return StepResult(bool(row.fenced), threaded, ended)
