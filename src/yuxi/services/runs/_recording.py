"""One step of a run's record: everything the step produced, written in one lease-fenced
statement.

:meth:`RunService.recording <yuxi.services.runs.service.RunService.recording>` hands out a
:class:`RunRecord`; what the step records through it is collected (nothing is sent while the
block runs) and written as the block ends, in one statement fenced by the worker's live lease
(:mod:`yuxi.repositories.runs.step_repository`): all of it or, when the lease is lost or the
run's thread is gone, none (:class:`LeaseLost`). A step of a run — its start, the model's tool
calls, a tool's result, the final reply with its last token text and the run's end — is one
round trip, outside a transaction block: no ``BEGIN``, no separate lease check, no ``COMMIT``.
A message names the run's thread by its id and owner in the statement (no read of the thread
first); the step's events follow the run's last, in order, with one notification.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from yuxi.limits import EVENT_TEXT_BYTES
from yuxi.repositories.runs.step_repository import StepWrites
from yuxi.services.runs._records import ProposedToolCall, ToolOutcome, not_completed
from yuxi.utils.string_utils import truncate_utf8

__all__ = ["RunRecord"]


class RunRecord:
    """The writes of one step of a run, as the run's domain names them (collected in
    :attr:`writes`; :meth:`RunService.recording` writes them)."""

    def __init__(self) -> None:
        self.writes = StepWrites()

    def event(self, event_type: str, data: dict[str, Any]) -> None:
        """The run's next event."""
        self.writes.event(event_type, data)

    def memory_snapshot(self, sha256: str, size: int) -> None:
        """What the memory middleware injected: on the run row, and as an event."""
        self.writes.snapshot = (sha256, size)
        self.event("memory_snapshot", {"sha256": sha256, "size": size})

    def close_open_tool_calls(self, why: str) -> None:
        """Close the thread's tool calls an earlier run left open (cancelled, failed, lease
        lost, crashed), answered with ``why``."""
        self.writes.close_open_calls(why)

    def tool_calls(self, content: str, calls: Sequence[ProposedToolCall]) -> None:
        """The model asked for tools: an assistant tool_call message, one ToolCall row and one
        ``tool_start`` event each."""
        message = self.writes.message("assistant", content, "tool_call", None)
        for call in calls:
            self.writes.new_call(message, call.tool_call_id, call.name, call.args or {})
        for call in calls:
            self.event(
                "tool_start",
                {"tool_call_id": call.tool_call_id, "name": call.name, "args": call.args or {}},
            )

    def tool_result(self, outcome: ToolOutcome) -> None:
        """A tool message, its ToolCall row finished (even one proposed by an earlier run of the
        thread, before an approval), and a ``tool_end`` event with the text cut to size."""
        self.writes.message(
            "tool",
            outcome.content,
            "tool_result",
            {"tool_call_id": outcome.tool_call_id, "name": outcome.name},
        )
        self.writes.finish_call(
            outcome.tool_call_id,
            outcome.status,
            outcome.content,
            outcome.content if outcome.status == "error" else None,
        )
        shown, cut = truncate_utf8(outcome.content, EVENT_TEXT_BYTES)
        self.event(
            "tool_end",
            {
                "tool_call_id": outcome.tool_call_id,
                "name": outcome.name,
                "status": outcome.status,
                "result": shown,
                "truncated": cut,
            },
        )

    def reply(self, content: str) -> None:
        """The assistant's reply, and a ``message`` event carrying its id."""
        message = self.writes.message("assistant", content, "text", None)
        self.writes.event("message", {"role": "assistant", "content": content}, message=message)

    def finish(
        self,
        status: str,
        *,
        output: dict[str, Any] | None = None,
        error_code: str | None = None,
        error_message: str | None = None,
    ) -> None:
        """The final status event and the run row settled, in this step. A cancelled or failed
        run's calls it proposed but never answered end with it (an interrupted run's calls
        stay open: its resume answers them)."""
        data: dict[str, Any] = {"status": status}
        if error_code:
            data["error"] = {"code": error_code, "message": error_message}
        self.event("run_status", data)
        self.writes.settle(
            status, output=output, error_code=error_code, error_message=error_message
        )
        if status in ("cancelled", "failed"):
            self.close_open_tool_calls(not_completed(status, error_code))
