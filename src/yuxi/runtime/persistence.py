"""What a worker writes while it runs: events, messages and tool calls, all fenced by its lease.

Every write first checks — in the same transaction, by the database clock — that this worker
still owns a live lease on the run (``SELECT … FOR SHARE``). A worker that lost its lease gets
:class:`LeaseLost` and must stop: it cannot add to the record or finish the run.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from yuxi.db.models import AgentRun, Conversation
from yuxi.repositories.agent_run_repository import AgentRunRepository
from yuxi.repositories.conversation_repository import ConversationRepository
from yuxi.repositories.run_event_repository import RunEventRepository
from yuxi.utils.string_utils import truncate_utf8

EVENT_TEXT_BYTES = 4096


class LeaseLost(Exception):
    """This worker no longer owns the run."""


class RunRecorder:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], run: AgentRun, worker_id: str
    ) -> None:
        self._sessions = sessions
        self.run = run
        self.worker_id = worker_id
        self._tool_rows: dict[str, int] = {}

    async def _fence(self, session: AsyncSession) -> None:
        row = await session.execute(
            select(AgentRun.id)
            .where(
                AgentRun.id == self.run.id,
                AgentRun.worker_id == self.worker_id,
                AgentRun.status == "running",
                AgentRun.lease_expires_at > func.now(),
            )
            .with_for_update(read=True)
        )
        if row.scalar_one_or_none() is None:
            raise LeaseLost(self.run.id)

    async def _conversation(self, session: AsyncSession) -> Conversation:
        conversation = await ConversationRepository(session).get_owned(
            self.run.uid, self.run.conversation_thread_id
        )
        if conversation is None:
            raise LeaseLost(f"thread of run {self.run.id} is gone")
        return conversation

    async def event(self, event_type: str, data: dict[str, Any]) -> None:
        async with self._sessions() as session, session.begin():
            seq = await RunEventRepository(session).append_as_owner(
                self.run.id, self.worker_id, event_type, data
            )
            if seq is None:
                raise LeaseLost(self.run.id)

    async def assistant_tool_calls(self, content: str, tool_calls: list[dict[str, Any]]) -> None:
        """The model asked for tools: an assistant tool_call message plus one ToolCall each."""
        async with self._sessions() as session, session.begin():
            await self._fence(session)
            repo = ConversationRepository(session)
            message = await repo.add_message(
                await self._conversation(session),
                role="assistant",
                content=content,
                message_type="tool_call",
                run_id=self.run.id,
            )
            for call in tool_calls:
                row = await repo.add_tool_call(
                    message.id,
                    tool_call_id=str(call.get("id") or ""),
                    name=str(call.get("name") or ""),
                    input=call.get("args") or {},
                )
                self._tool_rows[str(call.get("id") or "")] = row.id
            for call in tool_calls:
                args = call.get("args") or {}
                await RunEventRepository(session).append(
                    self.run.id,
                    "tool_start",
                    {"tool_call_id": call.get("id"), "name": call.get("name"), "args": args},
                )

    async def tool_result(self, tool_call_id: str, name: str, content: str, status: str) -> None:
        async with self._sessions() as session, session.begin():
            await self._fence(session)
            repo = ConversationRepository(session)
            await repo.add_message(
                await self._conversation(session),
                role="tool",
                content=content,
                message_type="tool_result",
                run_id=self.run.id,
                metadata={"tool_call_id": tool_call_id, "name": name},
            )
            pk = self._tool_rows.get(tool_call_id) or await _tool_call_pk(
                session, self.run, tool_call_id
            )
            if pk is not None:
                await repo.finish_tool_call(
                    pk,
                    output=content,
                    status=status,
                    error=content if status == "error" else None,
                )
            shown, cut = truncate_utf8(content, EVENT_TEXT_BYTES)
            await RunEventRepository(session).append(
                self.run.id,
                "tool_end",
                {
                    "tool_call_id": tool_call_id,
                    "name": name,
                    "status": status,
                    "result": shown,
                    "truncated": cut,
                },
            )

    async def assistant_reply(self, content: str) -> None:
        async with self._sessions() as session, session.begin():
            await self._fence(session)
            message = await ConversationRepository(session).add_message(
                await self._conversation(session),
                role="assistant",
                content=content,
                run_id=self.run.id,
            )
            await RunEventRepository(session).append(
                self.run.id,
                "message",
                {"message_id": message.id, "role": "assistant", "content": content},
            )

    async def record_snapshot(self, sha256: str, size: int) -> None:
        async with self._sessions() as session, session.begin():
            await self._fence(session)
            await AgentRunRepository(session).record_memory_snapshot(
                self.run.id, sha256=sha256, size=size
            )
            await RunEventRepository(session).append(
                self.run.id, "memory_snapshot", {"sha256": sha256, "size": size}
            )

    async def finish(
        self,
        status: str,
        *,
        output: dict[str, Any] | None = None,
        error_code: str | None = None,
        error_message: str | None = None,
    ) -> None:
        """Record the final status event and finish — atomically, and only as the owner."""
        async with self._sessions() as session, session.begin():
            events = RunEventRepository(session)
            data: dict[str, Any] = {"status": status}
            if error_code:
                data["error"] = {"code": error_code, "message": error_message}
            if (
                await events.append_as_owner(self.run.id, self.worker_id, "run_status", data)
                is None
            ):
                raise LeaseLost(self.run.id)
            finished = await AgentRunRepository(session).finish(
                self.run.id,
                self.worker_id,
                status=status,
                output=output,
                error_code=error_code,
                error_message=error_message,
            )
            if not finished:
                raise LeaseLost(self.run.id)


async def _tool_call_pk(session: AsyncSession, run: AgentRun, tool_call_id: str) -> int | None:
    """A tool call proposed by an earlier run of the thread (approval → resume)."""
    from yuxi.db.models import Message, ToolCall

    row = await session.execute(
        select(ToolCall.id)
        .join(Message, Message.id == ToolCall.message_id)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(
            Conversation.thread_id == run.conversation_thread_id,
            Conversation.uid == run.uid,
            ToolCall.tool_call_id == tool_call_id,
        )
        .order_by(ToolCall.id.desc())
        .limit(1)
    )
    return row.scalar_one_or_none()
