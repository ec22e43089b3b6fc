"""Tool-call rows: what the model asked for in a thread, and how each call ended.

A row is written ``pending`` when a run records the model's tool calls and finished when the
result comes (possibly by a later ``resume`` run of the same thread), or closed as an error when
its run ends first. Reads for the owner's thread view come from here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import ColumnElement, String, Table, and_, bindparam, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.db.models import Conversation, Message, ToolCall
from yuxi.db.prebuilt import PrebuiltStatement

__all__ = ["ToolCallRepository", "open_in_thread"]


# The statements a run's record makes on every tool call, built once with bind parameters on the
# table and run prebuilt (:mod:`yuxi.db.prebuilt`).
_TABLE = cast(Table, ToolCall.__table__)
_CALLS = _TABLE.c
_ADD = PrebuiltStatement(
    insert(_TABLE)
    .values(
        message_id=bindparam("message_id", type_=_CALLS.message_id.type),
        tool_call_id=bindparam("tool_call_id", type_=_CALLS.tool_call_id.type),
        name=bindparam("name", type_=_CALLS.name.type),
        input=bindparam("input", type_=_CALLS.input.type),
        output=bindparam("output", type_=_CALLS.output.type),
        status=bindparam("status", type_=_CALLS.status.type),
        error=bindparam("error", type_=_CALLS.error.type),
    )
    .returning(_CALLS.id)
)
_UID = bindparam("uid", type_=String)
_THREAD_ID = bindparam("thread_id", type_=String)


def open_in_thread(uid: Any, thread_id: Any) -> ColumnElement[bool]:
    """THE "tool call still open in the user's thread" condition over ``tool_calls``: pending,
    on a message of the thread. ``uid`` and ``thread_id`` are values or bind parameters."""
    messages = (
        select(Message.id)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(Conversation.thread_id == thread_id, Conversation.uid == uid)
    )
    return and_(_CALLS.status == "pending", _CALLS.message_id.in_(messages))


_CLOSE_PENDING = PrebuiltStatement(
    update(_TABLE)
    .where(open_in_thread(_UID, _THREAD_ID))
    .values(
        status="error",
        error=bindparam("error", type_=_CALLS.error.type),
        output=bindparam("error", type_=_CALLS.output.type),
    )
    .returning(_CALLS.id)
)


def _finish_in_thread() -> PrebuiltStatement:
    """Finish the newest ToolCall row with ``tool_call_id`` in the user's thread, found and
    updated in one statement: ``UPDATE tool_calls … WHERE id = (SELECT the newest …)``. The
    row may have been proposed by an earlier run of the thread (approval → resume)."""
    newest = _TABLE.alias("newest")
    found = (
        select(newest.c.id)
        .join(Message, Message.id == newest.c.message_id)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(
            Conversation.thread_id == _THREAD_ID,
            Conversation.uid == _UID,
            newest.c.tool_call_id == bindparam("tool_call_id", type_=String),
        )
        .order_by(newest.c.id.desc())
        .limit(1)
        .scalar_subquery()
    )
    return PrebuiltStatement(
        update(_TABLE)
        .where(_CALLS.id == found)
        .values(
            output=bindparam("output", type_=_CALLS.output.type),
            status=bindparam("status", type_=_CALLS.status.type),
            error=bindparam("error", type_=_CALLS.error.type),
        )
        .returning(_CALLS.id)
    )


_FINISH_IN_THREAD = _finish_in_thread()


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
    ) -> int:
        """A new ToolCall row; its primary key."""
        params = {
            "message_id": message_id,
            "tool_call_id": tool_call_id,
            "name": name,
            "input": input,
            "output": output,
            "status": status,
            "error": error,
        }
        return int((await _ADD.one(self.session, params)).id)

    async def close_pending(self, uid: str, thread_id: str, error: str) -> int:
        """Mark every still-pending tool call of the user's thread as failed with ``error``
        (their run ended before they did); the number of calls closed."""
        params = {"uid": uid, "thread_id": thread_id, "error": error}
        return len(await _CLOSE_PENDING.all(self.session, params))

    async def finish_in_thread(
        self,
        uid: str,
        thread_id: str,
        tool_call_id: str,
        *,
        output: str | None,
        status: str,
        error: str | None = None,
    ) -> bool:
        """Finish the newest ToolCall row with ``tool_call_id`` in the user's thread (even one
        an earlier run of the thread proposed). False: the thread has no such call."""
        params = {
            "uid": uid,
            "thread_id": thread_id,
            "tool_call_id": tool_call_id,
            "output": output,
            "status": status,
            "error": error,
        }
        return await _FINISH_IN_THREAD.first(self.session, params) is not None

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
