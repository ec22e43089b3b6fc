"""Conversations, messages and tool calls; and the bounded, allowlisted history lookback.

Owner (design.md §2, §6) of history visibility, the field allowlist, the byte budgets and the
truncation flags of ``search_thread_messages`` / ``read_thread_messages``. Split in private
modules: the SQL (visibility inside every WHERE, explicit columns only) in
:mod:`~yuxi.repositories._history_search` (the ranked search) and
:mod:`~yuxi.repositories._history_reads`, the byte arithmetic in
:mod:`~yuxi.repositories._history_budget`, the response shapes and trimming policy in
:mod:`~yuxi.repositories._history_shape`.

Never commits: the service or test that calls it owns the transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.util import identity_key

from yuxi.db.models import Conversation, Message, SubagentThread
from yuxi.errors import InvalidArgument, NotFound
from yuxi.limits import (
    LIST_MAX_CONVERSATIONS,
    LIST_MAX_MESSAGES,
    READ_MAX_MESSAGES,
    THREAD_ID_MAX_CHARS,
)
from yuxi.repositories import _history_params as p
from yuxi.repositories import _history_ranking as ranking
from yuxi.repositories import _history_reads as reads
from yuxi.repositories import _history_shape as shape
from yuxi.repositories import _history_threads as listing
from yuxi.repositories._history_visibility import NOT_VISIBLE, is_subagent_child
from yuxi.utils.string_utils import is_valid_text
from yuxi.vocabulary import CONVERSATION_SOURCES, CONVERSATION_STATUSES, MESSAGE_ROLES

__all__ = ["NOT_VISIBLE", "ConversationRepository"]

_BIGINT_MAX = 2**63 - 1


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(int(value), high))


class ConversationRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    # -- conversations ----------------------------------------------------------------------

    async def create_conversation(
        self,
        uid: str,
        *,
        thread_id: str | None = None,
        title: str = "",
        source: str = "chat",
        metadata: dict[str, Any] | None = None,
    ) -> Conversation:
        if source not in CONVERSATION_SOURCES:
            raise InvalidArgument(f"unknown conversation source {source!r}")
        conversation = Conversation(
            thread_id=thread_id or uuid.uuid4().hex,
            uid=uid,
            title=title,
            status="active",
            source=source,
            metadata_=dict(metadata or {}),
        )
        self.session.add(conversation)
        await self.session.flush()
        return conversation

    async def get_owned(self, uid: str, thread_id: str) -> Conversation | None:
        """The caller's own thread, whatever its status or source (None for anyone else's)."""
        row = await self.session.execute(
            select(Conversation).where(Conversation.thread_id == thread_id, Conversation.uid == uid)
        )
        return row.scalar_one_or_none()

    async def list_conversations(
        self,
        uid: str,
        *,
        include_archived: bool = False,
        limit: int = 50,
        sources: Sequence[str] = ("chat",),
        include_subagent_children: bool = False,
    ) -> list[Conversation]:
        """The caller's threads, newest updated first; never deleted ones.

        By default only active top-level chat threads: ``sources`` widens the source filter,
        ``include_subagent_children`` lists persisted SubAgent children too.
        """
        statuses = ("active", "archived") if include_archived else ("active",)
        stmt = select(Conversation).where(
            Conversation.uid == uid,
            Conversation.status.in_(statuses),
            Conversation.source.in_(tuple(sources)),
        )
        if not include_subagent_children:
            stmt = stmt.where(~is_subagent_child())
        stmt = stmt.order_by(Conversation.updated_at.desc(), Conversation.id.desc()).limit(
            _clamp(limit, 1, LIST_MAX_CONVERSATIONS)
        )
        return list((await self.session.execute(stmt)).scalars())

    async def get_owned_chat_thread(self, uid: str, thread_id: str) -> Conversation | None:
        """The caller's own ordinary thread, as the thread list shows it: source ``chat``, not
        deleted, not a SubAgent's child (None for anything else, including anyone else's)."""
        row = await self.session.execute(
            select(Conversation).where(
                Conversation.thread_id == thread_id,
                Conversation.uid == uid,
                Conversation.status != "deleted",
                Conversation.source == "chat",
                ~is_subagent_child(),
            )
        )
        return row.scalar_one_or_none()

    async def update_thread_settings(
        self, conversation: Conversation, *, title: str | None, recall_excluded: bool | None
    ) -> None:
        """Set the given fields (``None``: unchanged). ``updated_at`` stays: it is the thread's
        last activity, which a rename or a recall toggle is not."""
        if title is not None:
            conversation.title = title
        if recall_excluded is not None:
            conversation.recall_excluded = recall_excluded
        await self.session.flush()

    async def set_status(self, uid: str, thread_id: str, status: str) -> None:
        if status not in CONVERSATION_STATUSES:
            raise InvalidArgument(f"unknown conversation status {status!r}")
        stmt = (
            update(Conversation)
            .where(Conversation.thread_id == thread_id, Conversation.uid == uid)
            .values(status=status, updated_at=func.now())
            .returning(Conversation.id, Conversation.updated_at)
            .execution_options(synchronize_session=False)
        )
        row = (await self.session.execute(stmt)).one_or_none()
        if row is None:
            raise NotFound("thread not found")
        loaded = self.session.identity_map.get(identity_key(Conversation, row.id))
        if loaded is not None:
            set_committed_value(loaded, "status", status)
            set_committed_value(loaded, "updated_at", row.updated_at)

    async def link_subagent_thread(
        self, parent: Conversation, child: Conversation, created_by_run_id: str | None
    ) -> SubagentThread:
        """Persist ``child`` as a SubAgent thread of ``parent`` (which hides it from history)."""
        if parent.uid != child.uid:
            raise InvalidArgument("a SubAgent thread must belong to its parent's user")
        if parent.id == child.id:
            raise InvalidArgument("a thread cannot be its own SubAgent thread")
        link = SubagentThread(
            parent_conversation_id=parent.id,
            child_conversation_id=child.id,
            created_by_run_id=created_by_run_id,
        )
        self.session.add(link)
        await self.session.flush()
        return link

    # -- messages and tool calls --------------------------------------------------------------

    async def add_message(
        self,
        conversation: Conversation,
        *,
        role: str,
        content: str,
        message_type: str = "text",
        metadata: dict[str, Any] | None = None,
        image_content: str | None = None,
        attachments: list[Any] | None = None,
        run_id: str | None = None,
    ) -> Message:
        """Append a message (owned by the conversation's user) and touch ``updated_at``."""
        if role not in MESSAGE_ROLES:
            raise InvalidArgument(f"unknown message role {role!r}")
        message = Message(
            conversation_id=conversation.id,
            uid=conversation.uid,
            role=role,
            message_type=message_type,
            content=content,
            metadata_=dict(metadata or {}),
            image_content=image_content,
            attachments=attachments,
            run_id=run_id,
        )
        self.session.add(message)
        await self.session.flush()
        touched = await self.session.execute(
            update(Conversation)
            .where(Conversation.id == conversation.id)
            .values(updated_at=func.now())
            .returning(Conversation.updated_at)
            .execution_options(synchronize_session=False)
        )
        set_committed_value(conversation, "updated_at", touched.scalar_one())
        return message

    async def list_messages(self, conversation_id: int, *, limit: int = 200) -> list[Message]:
        """The latest ``limit`` messages of a thread, chronological — for the owner's API view.

        The caller has already checked ownership (``get_owned``); this is not the model's view.
        """
        newest = (
            select(Message)
            .where(Message.conversation_id == conversation_id)
            .order_by(Message.id.desc())
            .limit(_clamp(limit, 1, LIST_MAX_MESSAGES))
        )
        rows = list((await self.session.execute(newest)).scalars())
        rows.reverse()
        return rows

    async def search_messages(
        self,
        uid: str,
        query: str,
        limit: int,
        *,
        current_run_id: str | None = None,
        after: datetime | None = None,
        before: datetime | None = None,
        thread_id: str | None = None,
    ) -> dict[str, Any]:
        """The caller's visible messages holding a term of ``query``, best first by BM25: see
        :func:`yuxi.repositories._history_ranking.search_messages`."""
        return await ranking.search_messages(
            self.session,
            uid,
            query,
            limit,
            current_run_id=current_run_id,
            after=after,
            before=before,
            thread_id=thread_id,
        )

    # -- history lookback: read ---------------------------------------------------------------

    async def read_messages(
        self,
        uid: str,
        thread_id: str,
        *,
        message_id: int | None,
        limit: int,
        include_tools: bool,
    ) -> dict[str, Any]:
        """Up to 20 visible messages of one visible thread, chronological, within budgets.

        Without ``message_id``: the latest ``limit``. With it: a window around that message
        that always contains it. Every unreadable case raises ``NotFound(NOT_VISIBLE)``.
        """
        if (
            not isinstance(thread_id, str)
            or not thread_id
            or len(thread_id) > THREAD_ID_MAX_CHARS
            or not is_valid_text(thread_id)
        ):
            raise NotFound(NOT_VISIBLE)
        if message_id is not None and (
            isinstance(message_id, bool)
            or not isinstance(message_id, int)
            or not 1 <= message_id <= _BIGINT_MAX
        ):
            raise NotFound(NOT_VISIBLE)
        limit = _clamp(limit, 1, READ_MAX_MESSAGES)
        await self.session.execute(p.PLAN_WITH_PARAMETERS)
        thread = (await self.session.execute(*reads.thread_statement(uid, thread_id))).one_or_none()
        if thread is None:
            raise NotFound(NOT_VISIBLE)
        conversation_id = int(thread.id)
        rows, anchor = await self._message_window(uid, conversation_id, message_id, limit)
        tool_calls: list[dict[str, Any]] | None = None
        tools_cut = False
        if include_tools:  # the ToolCall table is queried only here
            tool_rows = await self.session.execute(
                *reads.tool_calls_statement(uid, conversation_id)
            )
            tool_calls, tools_cut = shape.tool_call_items(tool_rows.all())
        return shape.read_response(
            thread_id=thread.thread_id,
            title=thread.title or "",
            rows=rows,
            anchor=anchor,
            tool_calls=tool_calls,
            tools_cut=tools_cut,
        )

    async def _message_window(
        self, uid: str, conversation_id: int, anchor_id: int | None, limit: int
    ) -> tuple[list[Any], int | None]:
        """Rows ``(id, role, content prefix)`` in chronological order, and the anchor's index."""
        if anchor_id is None:
            latest = await self.session.execute(
                *reads.thread_window("latest", uid, conversation_id, limit=limit)
            )
            return list(reversed(latest.all())), None
        anchor = (
            await self.session.execute(
                *reads.thread_window("anchor", uid, conversation_id, anchor_id=anchor_id)
            )
        ).one_or_none()
        if anchor is None:
            raise NotFound(NOT_VISIBLE)
        side = limit - 1
        before = (
            await self.session.execute(
                *reads.thread_window(
                    "before", uid, conversation_id, anchor_id=anchor_id, limit=side
                )
            )
        ).all()
        after = (
            await self.session.execute(
                *reads.thread_window("after", uid, conversation_id, anchor_id=anchor_id, limit=side)
            )
        ).all()
        want_before = side // 2
        want_after = side - want_before
        if len(before) < want_before:
            want_after = side - len(before)
        elif len(after) < want_after:
            want_before = side - len(after)
        older = list(reversed(before[:want_before]))
        return [*older, anchor, *after[:want_after]], len(older)

    # -- history lookback: list threads -------------------------------------------------------

    async def list_threads(
        self, uid: str, *, before: datetime | None, limit: int
    ) -> dict[str, Any]:
        """The caller's visible threads that hold a visible message, newest last message
        first, within budgets: ``{"items", "truncated", "has_more"}``. ``before`` (aware)
        keeps only threads whose last visible message is strictly earlier. One statement
        (:mod:`~yuxi.repositories._history_threads`)."""
        limit = listing.clamp_limit(limit)
        await self.session.execute(p.PLAN_WITH_PARAMETERS)
        statement = listing.threads_statement(uid, before=before, limit=limit)
        rows = (await self.session.execute(*statement)).all()
        return listing.threads_response(rows, limit=limit)
