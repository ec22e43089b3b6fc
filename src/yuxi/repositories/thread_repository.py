"""Threads, their messages and tool calls, for their owner and the runs that write them.

The model's lookback into past threads is :mod:`yuxi.repositories.lookback`; the visibility rule
both share is :mod:`yuxi.repositories.lookback.visibility`.

Never commits: the service or test that calls it owns the transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple, cast

from sqlalchemy import (
    String,
    Table,
    bindparam,
    func,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.util import identity_key

from yuxi.db.models import Conversation, Message, SubagentThread
from yuxi.db.prebuilt import PrebuiltStatement
from yuxi.errors import InvalidArgument, NotFound
from yuxi.limits import (
    LIST_MAX_CONVERSATIONS,
    LIST_MAX_MESSAGES,
)
from yuxi.repositories.lookback.visibility import NOT_VISIBLE, is_subagent_child
from yuxi.repositories.message_statements import ADD_MESSAGE, ADD_MESSAGE_TO_THREAD, message_params
from yuxi.vocabulary import CONVERSATION_SOURCES, CONVERSATION_STATUSES

__all__ = ["NOT_VISIBLE", "AddedMessage", "ThreadRef", "ThreadRepository"]

_BIGINT_MAX = 2**63 - 1


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(int(value), high))


class AddedMessage(NamedTuple):
    """A message just appended: its id, its owner, and its thread's new ``updated_at``."""

    id: int
    uid: str
    updated_at: Any


class ThreadRef(NamedTuple):
    """A thread's key, owner, public id, status and title, read in one prebuilt statement (no
    ORM entity): what a submission that wrote nothing reads to say why."""

    id: int
    uid: str
    thread_id: str
    status: str
    title: str


_THREADS = cast(Table, Conversation.__table__).c


_OWNED = select(Conversation).where(
    Conversation.thread_id == bindparam("thread_id", type_=String),
    Conversation.uid == bindparam("uid", type_=String),
)
_OWNED_REF = PrebuiltStatement(
    select(*(_THREADS[name] for name in ThreadRef._fields)).where(
        _THREADS.thread_id == bindparam("thread_id", type_=String),
        _THREADS.uid == bindparam("uid", type_=String),
    )
)


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
        params = {"thread_id": thread_id, "uid": uid}
        return (await self.session.execute(_OWNED, params)).scalar_one_or_none()

    async def get_owned_ref(self, uid: str, thread_id: str) -> ThreadRef | None:
        """:meth:`get_owned`'s thread as a :class:`ThreadRef`: one prebuilt statement, for a
        caller that only reads it (why a submission wrote nothing)."""
        row = await _OWNED_REF.first(self.session, {"thread_id": thread_id, "uid": uid})
        return None if row is None else ThreadRef(*row)

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
        thread: Conversation | ThreadRef,
        *,
        role: str,
        content: str,
        message_type: str = "text",
        metadata: dict[str, Any] | None = None,
        image_content: str | None = None,
        attachments: list[Any] | None = None,
        run_id: str | None = None,
    ) -> AddedMessage:
        """Append a message (owned by the thread's user) and touch ``updated_at``, in one
        statement; a loaded row (``Conversation``) takes the new ``updated_at`` too. (A new
        message's submission, which also titles the thread, is ``AgentRunRepository
        .submit_message``.)"""
        params = message_params(
            role, content, message_type, metadata, image_content, attachments, run_id
        )
        params["conversation_id"] = thread.id
        row = await ADD_MESSAGE.first(self.session, params)
        if row is None:
            raise NotFound("thread not found")
        added = AddedMessage(int(row.id), row.uid, row.updated_at)
        if isinstance(thread, Conversation):
            set_committed_value(thread, "updated_at", added.updated_at)
        return added

    async def add_message_to_thread(
        self,
        uid: str,
        thread_id: str,
        *,
        role: str,
        content: str,
        message_type: str = "text",
        metadata: dict[str, Any] | None = None,
        run_id: str | None = None,
    ) -> AddedMessage | None:
        """Append a message to ``uid``'s thread ``thread_id`` (whatever its status) and touch
        its ``updated_at``, in one statement. None: the user has no such thread (nothing
        written)."""
        params = message_params(role, content, message_type, metadata, None, None, run_id)
        params["uid"] = uid
        params["thread_id"] = thread_id
        added = await ADD_MESSAGE_TO_THREAD.first(self.session, params)
        return None if added is None else AddedMessage(int(added.id), added.uid, added.updated_at)

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
