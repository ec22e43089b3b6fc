"""Tool-call rows: what the model asked for in a thread, and how each call ended.

A row is written ``pending`` when a run records the model's tool calls and finished when the
result comes (possibly by a later ``resume`` run of the same thread), or closed as an error when
its run ends first. Reads for the owner's thread view come from here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.db.models import Conversation, Message, ToolCall
from yuxi.errors import NotFound

__all__ = ["ToolCallRepository"]


class ToolCallRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(
        self,
        message_id: int,
        *,
        tool_call_id: str,
        name: str,
        input: Any,
        output: str | None = None,
        status: str = "pending",
        error: str | None = None,
    ) -> ToolCall:
        call = ToolCall(
            message_id=message_id,
            tool_call_id=tool_call_id,
            name=name,
            input=input,
            output=output,
            status=status,
            error=error,
        )
        self.session.add(call)
        await self.session.flush()
        return call

    async def finish(
        self, tool_call_pk: int, *, output: str | None, status: str, error: str | None = None
    ) -> None:
        stmt = (
            update(ToolCall)
            .where(ToolCall.id == tool_call_pk)
            .values(output=output, status=status, error=error)
            .returning(ToolCall.id)
        )
        # Plain values: the default synchronisation updates a loaded ToolCall in memory too.
        if (await self.session.execute(stmt)).scalar_one_or_none() is None:
            raise NotFound("tool call not found")

    async def close_pending(self, uid: str, thread_id: str, error: str) -> int:
        """Mark every still-pending tool call of the user's thread as failed with ``error``
        (their run ended before they did); the number of calls closed."""
        thread_messages = (
            select(Message.id)
            .join(Conversation, Conversation.id == Message.conversation_id)
            .where(Conversation.thread_id == thread_id, Conversation.uid == uid)
        )
        stmt = (
            update(ToolCall)
            .where(ToolCall.status == "pending", ToolCall.message_id.in_(thread_messages))
            .values(status="error", error=error, output=error)
            .returning(ToolCall.id)
            .execution_options(synchronize_session=False)
        )
        return len((await self.session.execute(stmt)).scalars().all())

    async def find_in_thread(self, uid: str, thread_id: str, tool_call_id: str) -> int | None:
        """The newest ToolCall row with ``tool_call_id`` in the user's thread (its primary key).

        A tool call may have been proposed by an earlier run of the thread (approval → resume).
        """
        row = await self.session.execute(
            select(ToolCall.id)
            .join(Message, Message.id == ToolCall.message_id)
            .join(Conversation, Conversation.id == Message.conversation_id)
            .where(
                Conversation.thread_id == thread_id,
                Conversation.uid == uid,
                ToolCall.tool_call_id == tool_call_id,
            )
            .order_by(ToolCall.id.desc())
            .limit(1)
        )
        return row.scalar_one_or_none()

    async def list_for_messages(self, message_ids: Sequence[int]) -> dict[int, list[ToolCall]]:
        """The tool calls of the given messages, in one query, grouped by message id (by id).

        For the owner's API view: the caller passes ids from ``list_messages`` of a thread it
        has already checked ownership of.
        """
        ids = list(dict.fromkeys(message_ids))
        if not ids:
            return {}
        stmt = select(ToolCall).where(ToolCall.message_id.in_(ids)).order_by(ToolCall.id)
        grouped: dict[int, list[ToolCall]] = {}
        for call in (await self.session.execute(stmt)).scalars():
            grouped.setdefault(call.message_id, []).append(call)
        return grouped
