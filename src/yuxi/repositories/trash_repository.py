"""The trash: deleted threads, listed and restored by their owner, purged whole when their time
is over (design.md §12.3).

Never commits: :class:`~yuxi.services.chat.ThreadTrash` owns the transactions. A thread's data
is found the way the account deletion finds a user's (``yuxi.repositories.account_repository``):
its SubAgent threads through ``subagent_threads``, its runs by ``conversation_thread_id``, their
events by ``run_id``, its messages and their ``message_search`` rows by ``conversation_id``,
their tool calls by ``message_id``, and the LangGraph
checkpointer's rows by ``thread_id`` (``uow.accounts.delete_checkpoints``, the same statements).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.db.models import (
    AgentRun,
    Conversation,
    MemoryVersion,
    Message,
    MessageSearch,
    RunEvent,
    SubagentThread,
    ToolCall,
)
from yuxi.repositories.lookback.visibility import is_subagent_child
from yuxi.repositories.memory import lock_user_memory

__all__ = ["PurgeTarget", "TrashRepository"]


@dataclass(frozen=True)
class PurgeTarget:
    """A deleted thread locked for its purge."""

    id: int
    uid: str
    thread_id: str


def _live_run_of(thread_id: Any) -> Any:
    """A run of the thread that may still write: pending, or running under a live lease (by
    the database clock). A running run whose lease has run out writes nothing any more (every
    write is fenced by the lease, and reconciliation fails it)."""
    return (
        select(AgentRun.id)
        .where(
            AgentRun.conversation_thread_id == thread_id,
            or_(
                AgentRun.status == "pending",
                and_(AgentRun.status == "running", AgentRun.lease_expires_at > func.now()),
            ),
        )
        .exists()
    )


def _purgeable(
    days: int,
    *,
    uid: str | None = None,
    uids: Sequence[str] | None = None,
    thread_id: str | None = None,
) -> list[Any]:
    """A thread to purge: deleted at least ``days`` ago (by the database clock), without a live
    run; of ``uid`` / one of ``uids`` / ``thread_id`` when given."""
    conditions = [
        Conversation.status == "deleted",
        Conversation.deleted_at <= func.now() - func.make_interval(0, 0, 0, days),
        ~_live_run_of(Conversation.thread_id),
    ]
    if uid is not None:
        conditions.append(Conversation.uid == uid)
    if uids is not None:
        conditions.append(Conversation.uid.in_(list(uids)))
    if thread_id is not None:
        conditions.append(Conversation.thread_id == thread_id)
    return conditions


def _rowcount(result: Any) -> int:
    return int(getattr(result, "rowcount", 0) or 0)


class TrashRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    # -- the owner's view --------------------------------------------------------------------

    async def list_deleted(self, uid: str, limit: int) -> list[tuple[Conversation, bool]]:
        """The caller's deleted chat threads (as the thread list shows threads: no SubAgent
        child, no agent call), newest deletion first, each with whether its deletion forgot
        memory (a ``forget`` version names it)."""
        forgot = (
            select(MemoryVersion.id)
            .where(
                MemoryVersion.uid == uid,
                MemoryVersion.kind == "forget",
                MemoryVersion.thread_id == Conversation.thread_id,
            )
            .exists()
        )
        rows = await self.session.execute(
            select(Conversation, forgot)
            .where(
                Conversation.uid == uid,
                Conversation.status == "deleted",
                Conversation.source == "chat",
                ~is_subagent_child(),
            )
            .order_by(Conversation.deleted_at.desc(), Conversation.id.desc())
            .limit(limit)
        )
        return [(row[0], bool(row[1])) for row in rows]

    async def lock_deleted(self, uid: str, thread_id: str) -> Conversation | None:
        """The caller's deleted thread, ``FOR UPDATE``: a purge holding it makes this wait and
        then find nothing; once this holds it, a purge skips it."""
        row = await self.session.execute(
            select(Conversation)
            .where(
                Conversation.uid == uid,
                Conversation.thread_id == thread_id,
                Conversation.status == "deleted",
            )
            .with_for_update()
        )
        return row.scalar_one_or_none()

    async def has_live_run(self, thread_id: str) -> bool:
        return bool((await self.session.execute(select(_live_run_of(thread_id)))).scalar_one())

    # -- the purge -----------------------------------------------------------------------------

    async def due_owners(
        self, *, days: int, limit: int, uid: str | None = None, thread_id: str | None = None
    ) -> list[str]:
        """The owners of the first ``limit`` purgeable threads (:func:`_purgeable`), read
        without locking: whose memory locks a purge takes before any row's."""
        rows = await self.session.execute(
            select(Conversation.uid)
            .where(*_purgeable(days, uid=uid, thread_id=thread_id))
            .order_by(Conversation.deleted_at, Conversation.id)
            .limit(limit)
        )
        return sorted(set(rows.scalars()))

    async def lock_purgeable(
        self, *, days: int, limit: int, uids: Sequence[str], thread_id: str | None = None
    ) -> list[PurgeTarget]:
        """Up to ``limit`` purgeable threads of ``uids`` (:func:`_purgeable`), oldest deletion
        first, locked ``FOR UPDATE SKIP LOCKED``: purgers running at once each take other
        threads, and a thread being restored (or purged by its owner's "Delete now") is left
        alone."""
        rows = await self.session.execute(
            select(Conversation.id, Conversation.uid, Conversation.thread_id)
            .where(*_purgeable(days, uids=uids, thread_id=thread_id))
            .order_by(Conversation.deleted_at, Conversation.id)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        return [PurgeTarget(r.id, r.uid, r.thread_id) for r in rows]

    async def waiting(self, *, days: int) -> int:
        """Deleted threads whose time is over but which a live run still holds."""
        count = await self.session.execute(
            select(func.count())
            .select_from(Conversation)
            .where(
                Conversation.status == "deleted",
                Conversation.deleted_at <= func.now() - func.make_interval(0, 0, 0, days),
                _live_run_of(Conversation.thread_id),
            )
        )
        return int(count.scalar_one())

    async def lock_owners_memory(self, uids: Sequence[str]) -> None:
        """The memory lock of each owner, in one order (two purgers never wait on each other
        in a cycle), taken before any row is locked — the order of every memory writer and of
        the account deletion: no memory version of theirs is recorded or pruned while their
        threads' provenance is cleared."""
        for uid in sorted(set(uids)):
            await self.session.execute(lock_user_memory(uid))

    async def subagent_threads(self, ids: Sequence[int]) -> list[tuple[int, str]]:
        """The SubAgent threads (id, thread id) of the threads ``ids``: their data is the
        parent's and goes with it."""
        rows = await self.session.execute(
            select(Conversation.id, Conversation.thread_id)
            .join(SubagentThread, SubagentThread.child_conversation_id == Conversation.id)
            .where(SubagentThread.parent_conversation_id.in_(list(ids)))
        )
        return [(r.id, r.thread_id) for r in rows]

    async def forget_provenance(self, uids: Sequence[str], thread_ids: Sequence[str]) -> int:
        """Memory versions keep the memory text (it is the user's memory, not the thread's),
        but no link to a purged thread: its thread, run, asking message and tool call are
        cleared (shown as "a deleted thread"). Versions rows updated."""
        runs = select(AgentRun.id).where(AgentRun.conversation_thread_id.in_(list(thread_ids)))
        result = await self.session.execute(
            update(MemoryVersion)
            .where(
                MemoryVersion.uid.in_(list(set(uids))),
                or_(
                    MemoryVersion.thread_id.in_(list(thread_ids)),
                    MemoryVersion.run_id.in_(runs.scalar_subquery()),
                ),
            )
            .values(thread_id=None, run_id=None, message_id=None, tool_call_id=None)
            .execution_options(synchronize_session=False)
        )
        return _rowcount(result)

    async def delete_threads(self, ids: Sequence[int], thread_ids: Sequence[str]) -> dict[str, int]:
        """Every row of the threads ``ids`` (``thread_ids``: the same threads' ids), children
        first; rows deleted per table."""
        threads, names = list(ids), list(thread_ids)
        runs = select(AgentRun.id).where(AgentRun.conversation_thread_id.in_(names))
        messages = select(Message.id).where(Message.conversation_id.in_(threads))
        statements: list[tuple[str, Any]] = [
            ("run_events", delete(RunEvent).where(RunEvent.run_id.in_(runs.scalar_subquery()))),
            (
                "tool_calls",
                delete(ToolCall).where(ToolCall.message_id.in_(messages.scalar_subquery())),
            ),
            # Its own statement (not only the cascade) to be counted; the search totals'
            # trigger (migration 0008) keeps the thread's running totals right meanwhile.
            (
                "message_search",
                delete(MessageSearch).where(MessageSearch.conversation_id.in_(threads)),
            ),
            ("messages", delete(Message).where(Message.conversation_id.in_(threads))),
            (
                "subagent_threads",
                delete(SubagentThread).where(
                    or_(
                        SubagentThread.parent_conversation_id.in_(threads),
                        SubagentThread.child_conversation_id.in_(threads),
                    )
                ),
            ),
            ("agent_runs", delete(AgentRun).where(AgentRun.conversation_thread_id.in_(names))),
            ("conversations", delete(Conversation).where(Conversation.id.in_(threads))),
        ]
        counts: dict[str, int] = {}
        for table, statement in statements:
            result = await self.session.execute(
                statement.execution_options(synchronize_session=False)
            )
            counts[table] = _rowcount(result)
        return counts
