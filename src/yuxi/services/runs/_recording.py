"""One lease-fenced transaction of a run's record: everything one step of the run produced.

:meth:`RunService.recording <yuxi.services.runs.service.RunService.recording>` opens the unit
of work, checks (and holds, ``FOR SHARE``) the worker's live lease once, and hands out a
:class:`RunRecord`; every write made through it commits together when the block ends, or none
does. A step of a run — the model's tool calls, a tool's result, the final reply with its last
token text and the run's end — is one transaction instead of one per record: the lease check,
``BEGIN`` and ``COMMIT`` are paid once per step. A message names the run's thread by its id and
owner in the statement that appends it (no read of the thread first).

The step's events are kept in order and appended together, in one statement, as the block ends
(:meth:`RunRecord.flush`, before the commit): the same rows, seqs and order as one append each,
in the same fenced transaction, and the same one notification (PostgreSQL delivers one per
channel and payload per transaction). Nothing in the transaction reads the run's events back, so
writing them last changes nothing another transaction can see.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from yuxi.identity import RunIdentity
from yuxi.limits import EVENT_TEXT_BYTES
from yuxi.services.runs._records import LeaseLost, ProposedToolCall, ToolOutcome, not_completed
from yuxi.services.unit_of_work import UnitOfWork
from yuxi.utils.string_utils import truncate_utf8

__all__ = ["RunRecord"]


class RunRecord:
    """The writes of one fenced transaction of ``identity``'s run (its lease already checked)."""

    def __init__(self, uow: UnitOfWork, identity: RunIdentity, token: str) -> None:
        self._uow = uow
        self._identity = identity
        self._token = token
        #: The events of the step so far, in order, appended by :meth:`flush`.
        self._events: list[tuple[str, dict[str, Any]]] = []

    async def _message(
        self,
        role: str,
        content: str,
        *,
        message_type: str = "text",
        metadata: dict[str, Any] | None = None,
    ) -> int:
        """Append a message of the run to its thread, owned by its user; its id. A thread that
        is gone ends the run's record (:class:`LeaseLost`: nothing of the step is written)."""
        identity = self._identity
        added = await self._uow.threads.add_message_to_thread(
            identity.uid,
            identity.thread_id,
            role=role,
            content=content,
            message_type=message_type,
            metadata=metadata,
            run_id=identity.run_id,
        )
        if added is None:
            raise LeaseLost(f"thread of run {identity.run_id} is gone")
        return added.id

    async def event(self, event_type: str, data: dict[str, Any]) -> None:
        """The run's next event: appended with the step's others when the block ends."""
        self._events.append((event_type, data))

    async def flush(self) -> None:
        """Append the step's events, in order, in one statement (none: no statement)."""
        events, self._events = self._events, []
        await self._uow.events.append_all(self._identity.run_id, events)

    async def memory_snapshot(self, sha256: str, size: int) -> None:
        """What the memory middleware injected: on the run row, and as an event."""
        run_id = self._identity.run_id
        await self._uow.runs.record_memory_snapshot(run_id, sha256=sha256, size=size)
        await self.event("memory_snapshot", {"sha256": sha256, "size": size})

    async def close_open_tool_calls(self) -> str | None:
        """Close the thread's tool calls an earlier run left open (cancelled, failed, lease
        lost, crashed) and say how the run before this one ended, when it did not complete
        (None: no run did, or it completed — a completed run's graph answered every call it
        made, so nothing of it is left to close, in the records or in the checkpoint)."""
        identity, uow = self._identity, self._uow
        previous = await uow.runs.previous_top_level_run(
            identity.uid, identity.thread_id, identity.run_id
        )
        if previous is None:
            return None
        why = not_completed(previous.status, previous.error_code)
        if previous.open_calls:  # read with the previous run: no update when none is open
            await uow.tool_calls.close_pending(identity.uid, identity.thread_id, why)
        return None if previous.status == "completed" else why

    async def tool_calls(self, content: str, calls: Sequence[ProposedToolCall]) -> None:
        """The model asked for tools: an assistant tool_call message, one ToolCall row and one
        ``tool_start`` event each."""
        uow = self._uow
        message_id = await self._message("assistant", content, message_type="tool_call")
        for call in calls:
            await uow.tool_calls.add(
                message_id, tool_call_id=call.tool_call_id, name=call.name, input=call.args or {}
            )
        for call in calls:
            await self.event(
                "tool_start",
                {"tool_call_id": call.tool_call_id, "name": call.name, "args": call.args or {}},
            )

    async def tool_result(self, outcome: ToolOutcome) -> None:
        """A tool message, its ToolCall row finished (even one proposed by an earlier run of the
        thread, before an approval), and a ``tool_end`` event with the text cut to size."""
        uow, identity = self._uow, self._identity
        await self._message(
            "tool",
            outcome.content,
            message_type="tool_result",
            metadata={"tool_call_id": outcome.tool_call_id, "name": outcome.name},
        )
        await uow.tool_calls.finish_in_thread(
            identity.uid,
            identity.thread_id,
            outcome.tool_call_id,
            output=outcome.content,
            status=outcome.status,
            error=outcome.content if outcome.status == "error" else None,
        )
        shown, cut = truncate_utf8(outcome.content, EVENT_TEXT_BYTES)
        await self.event(
            "tool_end",
            {
                "tool_call_id": outcome.tool_call_id,
                "name": outcome.name,
                "status": outcome.status,
                "result": shown,
                "truncated": cut,
            },
        )

    async def reply(self, content: str) -> None:
        message_id = await self._message("assistant", content)
        await self.event(
            "message", {"message_id": message_id, "role": "assistant", "content": content}
        )

    async def finish(
        self,
        status: str,
        *,
        output: dict[str, Any] | None = None,
        error_code: str | None = None,
        error_message: str | None = None,
    ) -> None:
        """The final status event and the run row settled, in this transaction."""
        identity, uow = self._identity, self._uow
        data: dict[str, Any] = {"status": status}
        if error_code:
            data["error"] = {"code": error_code, "message": error_message}
        await self.event("run_status", data)
        finished = await uow.runs.finish(
            identity.run_id,
            self._token,
            status=status,
            output=output,
            error_code=error_code,
            error_message=error_message,
        )
        if not finished:
            raise LeaseLost(identity.run_id)
        if status in ("cancelled", "failed"):
            # Calls this run proposed but never answered end with it (an interrupted run's
            # calls stay open: its resume answers them).
            await uow.tool_calls.close_pending(
                identity.uid, identity.thread_id, not_completed(status, error_code)
            )
