"""Threads, their messages and tool calls, for their owner and the runs that write them.

The model's lookback into past threads is :mod:`yuxi.repositories.lookback`; the visibility rule
both share is :mod:`yuxi.repositories.lookback.visibility`.

Never commits: the service or test that calls it owns the transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
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
)
from yuxi.repositories.lookback.visibility import NOT_VISIBLE, is_subagent_child
from yuxi.vocabulary import CONVERSATION_SOURCES, CONVERSATION_STATUSES, MESSAGE_ROLES

__all__ = ["NOT_VISIBLE", "ThreadRepository"]

_BIGINT_MAX = 2**63 - 1


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(int(value), high))


class ThreadRepository:
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
        """Set the thread's status and touch ``updated_at``; ``deleted`` also stamps
        ``deleted_at`` (the trash's clock, migration 0011), any other status clears it."""
        if status not in CONVERSATION_STATUSES:
            raise InvalidArgument(f"unknown conversation status {status!r}")
        deleted_at = func.now() if status == "deleted" else None
        stmt = (
            update(Conversation)
            .where(Conversation.thread_id == thread_id, Conversation.uid == uid)
            .values(status=status, updated_at=func.now(), deleted_at=deleted_at)
            .returning(Conversation.id, Conversation.updated_at, Conversation.deleted_at)
            .execution_options(synchronize_session=False)
        )
        row = (await self.session.execute(stmt)).one_or_none()
        if row is None:
            raise NotFound("thread not found")
        loaded = self.session.identity_map.get(identity_key(Conversation, row.id))
        if loaded is not None:
            set_committed_value(loaded, "status", status)
            set_committed_value(loaded, "updated_at", row.updated_at)
            set_committed_value(loaded, "deleted_at", row.deleted_at)

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
