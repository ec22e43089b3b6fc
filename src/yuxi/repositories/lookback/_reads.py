"""The SQL of ``read_thread_messages``: the thread, a window of its messages, its tool calls.

Like :mod:`._history_search`: every statement carries the whole visibility rule of
:mod:`._history_visibility` in its WHERE clause, selects explicit columns only, cuts long text
in SQL to what a budget can use, and is built once per shape (:mod:`._history_params`).
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import ColumnElement, Select, Text, func, select

from yuxi.db.models import Conversation, Message, ToolCall
from yuxi.limits import READ_MESSAGE_BYTES, TOOL_ITEM_BYTES, TOOLS_MAX_ITEMS
from yuxi.repositories.lookback import _params as p
from yuxi.repositories.lookback._params import Statement
from yuxi.repositories.lookback.visibility import (
    conversation_visible,
    visible_conversation,
    visible_message,
)

__all__ = ["THREAD_WINDOWS", "thread_statement", "thread_window", "tool_calls_statement"]


@functools.cache
def _thread() -> Select[*tuple[Any, ...]]:
    columns: tuple[Any, ...] = (Conversation.id, Conversation.thread_id, Conversation.title)
    return select(*columns).where(Conversation.thread_id == p.THREAD, *visible_conversation(p.UID))


def thread_statement(uid: str, thread_id: str) -> Statement:
    return _thread(), {"uid": uid, "thread_id": thread_id}


def _content_prefix() -> ColumnElement[str]:
    # One character more than the budget: enough for truncate_utf8 to cut exactly as it would
    # cut the whole text (every character is at least one byte).
    return func.left(Message.content, READ_MESSAGE_BYTES + 1, type_=Text).label("content")


#: The reads of one thread's window: the newest ``limit``; the anchor itself; up to ``limit``
#: before it (newest first); up to ``limit`` after it (oldest first).
THREAD_WINDOWS = ("latest", "anchor", "before", "after")


@functools.cache
def _thread_window(kind: str) -> Select[*tuple[Any, ...]]:
    # Not a join: with the conversation joined, the planner put the thread's rows under a
    # nested loop, so ``ORDER BY id LIMIT n`` could not stop early and every read fetched and
    # sorted the whole thread (the figures: docs/performance.md). This shape, with
    # migration 0006's statistics, walks ``(conversation_id, id)`` and stops.
    columns: tuple[Any, ...] = (Message.id, Message.role, _content_prefix())
    base = (
        select(*columns)
        .where(Message.conversation_id == p.CONVERSATION, *visible_message(p.UID))
        .where(conversation_visible(p.UID, p.CONVERSATION))
    )
    if kind == "latest":
        return base.order_by(Message.id.desc()).limit(p.LIMIT)
    if kind == "anchor":
        return base.where(Message.id == p.ANCHOR)
    if kind == "before":
        return base.where(Message.id < p.ANCHOR).order_by(Message.id.desc()).limit(p.LIMIT)
    if kind == "after":
        return base.where(Message.id > p.ANCHOR).order_by(Message.id.asc()).limit(p.LIMIT)
    raise ValueError(f"not a thread window: {kind!r}")


def thread_window(
    kind: str, uid: str, conversation_id: int, *, anchor_id: int | None = None, limit: int = 1
) -> Statement:
    """Visible messages ``(id, role, content prefix)`` of one visible thread, for ``kind`` in
    :data:`THREAD_WINDOWS`."""
    return _thread_window(kind), {
        "uid": uid,
        "conversation_id": conversation_id,
        "anchor_id": anchor_id,
        "limit": limit,
    }


def tool_calls_statement(uid: str, conversation_id: int) -> Statement:
    """The newest tool calls of one visible thread, allowlisted columns only."""
    return _tool_calls(), {"uid": uid, "conversation_id": conversation_id}


@functools.cache
def _tool_calls() -> Select[*tuple[Any, ...]]:
    columns: tuple[Any, ...] = (
        ToolCall.id,
        ToolCall.tool_call_id,
        ToolCall.name,
        ToolCall.input,
        func.left(ToolCall.output, TOOL_ITEM_BYTES + 1, type_=Text).label("output"),
        ToolCall.status,
        func.left(ToolCall.error, TOOL_ITEM_BYTES + 1, type_=Text).label("error"),
    )
    return (
        select(*columns)
        .join(Message, Message.id == ToolCall.message_id)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(
            Conversation.id == p.CONVERSATION,
            Message.uid == p.UID,
            Message.conversation_id == p.CONVERSATION,
            *visible_conversation(p.UID),
        )
        .order_by(ToolCall.id.desc())
        .limit(TOOLS_MAX_ITEMS)
    )
