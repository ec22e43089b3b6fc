"""Tool-call rows: what the model asked for in a thread, and how each call ended.

A row is written ``pending`` when a run records the model's tool calls and finished when the
result comes (possibly by a later ``resume`` run of the same thread), or closed as an error when
its run ends first — each in a step of the run's record (:mod:`._step`), which uses
:func:`open_in_thread`. Reads for the owner's thread view come from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.db.models import Conversation, Message, ToolCall

__all__ = ["ToolCallRepository", "open_in_thread"]


_TABLE = cast(Table, ToolCall.__table__)
_CALLS = _TABLE.c


def open_in_thread(uid: Any, thread_id: Any) -> ColumnElement[bool]:
    """THE "tool call still open in the user's thread" condition over ``tool_calls``: pending,
    on a message of the thread. ``uid`` and ``thread_id`` are values or bind parameters."""
    messages = (
        select(Message.id)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(Conversation.thread_id == thread_id, Conversation.uid == uid)
        # Columns of an enclosing statement (a claimed run's uid and thread, two levels up)
        # are correlated to it, never joined in here: SQLAlchemy correlates on its own only to
        # the statement just around.
        .correlate_except(Message, Conversation)
    )
    return and_(_CALLS.status == "pending", _CALLS.message_id.in_(messages))


class ToolCallRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

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
