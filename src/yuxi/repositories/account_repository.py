"""One user's whole account: the statements that export it page by page and delete it.

Never commits: :class:`~yuxi.services.accounts.AccountService` owns the transactions. The
LangGraph checkpointer's tables (``checkpoints``, ``checkpoint_blobs``, ``checkpoint_writes``)
are not ours (the checkpointer's ``setup()`` creates them) and have no foreign key to a user:
their rows are found by ``thread_id``, which is the thread id of the user's conversation
(``RunExecutor`` passes ``identity.thread_id`` as LangGraph's ``thread_id``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ARRAY, String, bindparam, delete, func, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.db.models import (
    AgentRun,
    ApiToken,
    Conversation,
    LoginCode,
    MemoryVersion,
    Message,
    RunEvent,
    SubagentThread,
    ToolCall,
    User,
    UserConfig,
)
from yuxi.db.notifications import RUN_CANCEL, TOKENS_REVOKED
from yuxi.repositories.memory import lock_user_memory
from yuxi.repositories.notify import notify, notify_value

__all__ = ["CHECKPOINT_TABLES", "AccountRepository"]

#: The checkpointer's tables keyed by ``thread_id``, children first.
CHECKPOINT_TABLES = ("checkpoint_writes", "checkpoint_blobs", "checkpoints")

_THREAD_IDS = bindparam("thread_ids", type_=ARRAY(String()))
#: One statement per checkpoint table, written out (no table name is ever formatted in).
_DELETE_CHECKPOINTS = {
    "checkpoint_writes": text("DELETE FROM checkpoint_writes WHERE thread_id = ANY(:thread_ids)"),
    "checkpoint_blobs": text("DELETE FROM checkpoint_blobs WHERE thread_id = ANY(:thread_ids)"),
    "checkpoints": text("DELETE FROM checkpoints WHERE thread_id = ANY(:thread_ids)"),
}


class AccountRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    # -- locking and stopping -----------------------------------------------------------------

    async def lock_user(self, uid: str) -> User | None:
        """Take the user's memory lock (the one every MEMORY.md writer and every run's terminal
        update takes), then ``SELECT … FOR UPDATE`` the user's row: until this transaction
        ends no memory write lands and no row that references the user can be inserted (an
        insert needs ``FOR KEY SHARE`` on it)."""
        await self.session.execute(lock_user_memory(uid))
        row = await self.session.execute(select(User).where(User.uid == uid).with_for_update())
        return row.scalar_one_or_none()

    async def revoke_tokens(self, uid: str) -> int:
        """Revoke every live token of the user and tell the open event streams (they re-check
        their token when this commits, and end)."""
        revoked = await self.session.execute(
            update(ApiToken)
            .where(ApiToken.uid == uid, ApiToken.revoked_at.is_(None))
            .values(revoked_at=func.now())
            .returning(ApiToken.id)
        )
        count = len(revoked.all())
        await self.session.execute(notify(TOKENS_REVOKED, uid))
        return count

    async def stop_runs(self, uid: str) -> list[str]:
        """Cancel the user's pending runs and ask their running ones to stop (each running
        run's worker is told at once); the ids of the running ones."""
        await self.session.execute(
            update(AgentRun)
            .where(AgentRun.uid == uid, AgentRun.status == "pending")
            .values(status="cancelled", finished_at=func.now(), cancel_requested=True)
        )
        running = await self.session.execute(
            update(AgentRun)
            .where(AgentRun.uid == uid, AgentRun.status == "running")
            .values(cancel_requested=True)
            .returning(AgentRun.id, notify_value(RUN_CANCEL, AgentRun.id))
        )
        return [row.id for row in running]

    async def live_runs(self, uid: str) -> int:
        """The user's runs still running under a live lease (by the database clock)."""
        count = await self.session.execute(
            select(func.count())
            .select_from(AgentRun)
            .where(
                AgentRun.uid == uid,
                AgentRun.status == "running",
                AgentRun.lease_expires_at > func.now(),
            )
        )
        return int(count.scalar_one())

    # -- reading, a page at a time --------------------------------------------------------------

    async def thread_ids(self, uid: str) -> list[str]:
        rows = await self.session.execute(
            select(Conversation.thread_id).where(Conversation.uid == uid)
        )
        return list(rows.scalars())

    async def threads_page(self, uid: str, after_id: int, limit: int) -> list[Conversation]:
        """The user's threads (every status and source) with ``id > after_id``, by id."""
        rows = await self.session.execute(
            select(Conversation)
            .where(Conversation.uid == uid, Conversation.id > after_id)
            .order_by(Conversation.id)
            .limit(limit)
        )
        return list(rows.scalars())

    async def messages_page(
        self, conversation_id: int, after_id: int, limit: int
    ) -> tuple[list[Message], dict[int, list[ToolCall]]]:
        """One thread's messages with ``id > after_id``, oldest first, and their tool calls."""
        rows = await self.session.execute(
            select(Message)
            .where(Message.conversation_id == conversation_id, Message.id > after_id)
            .order_by(Message.id)
            .limit(limit)
        )
        messages = list(rows.scalars())
        calls: dict[int, list[ToolCall]] = {}
        if messages:
            found = await self.session.execute(
                select(ToolCall)
                .where(ToolCall.message_id.in_([m.id for m in messages]))
                .order_by(ToolCall.id)
            )
            for call in found.scalars():
                calls.setdefault(call.message_id, []).append(call)
        return messages, calls

    async def runs_page(
        self, uid: str, after: tuple[Any, str] | None, limit: int
    ) -> list[AgentRun]:
        """The user's runs after ``(created_at, id)``, oldest first."""
        stmt = select(AgentRun).where(AgentRun.uid == uid)
        if after is not None:
            stmt = stmt.where(
                or_(
                    AgentRun.created_at > after[0],
                    (AgentRun.created_at == after[0]) & (AgentRun.id > after[1]),
                )
            )
        rows = await self.session.execute(
            stmt.order_by(AgentRun.created_at, AgentRun.id).limit(limit)
        )
        return list(rows.scalars())

    # -- deleting --------------------------------------------------------------------------------

    async def delete_checkpoints(self, thread_ids: Sequence[str]) -> dict[str, int]:
        """Delete the checkpointer's rows of these threads; rows deleted per table (a table the
        checkpointer has not created yet counts 0)."""
        counts: dict[str, int] = {}
        ids = list(thread_ids)
        for table in CHECKPOINT_TABLES:
            exists = await self.session.execute(
                text("SELECT to_regclass(:name) IS NOT NULL"), {"name": table}
            )
            if not ids or not exists.scalar_one():
                counts[table] = 0
                continue
            deleted = await self.session.execute(
                _DELETE_CHECKPOINTS[table].bindparams(_THREAD_IDS), {"thread_ids": ids}
            )
            counts[table] = int(getattr(deleted, "rowcount", 0) or 0)
        return counts

    async def delete_rows(self, uid: str) -> dict[str, int]:
        """Delete every row of the user, children first; rows deleted per table. The user's
        row goes last (its ``ON DELETE CASCADE`` then reaches anything written meanwhile)."""
        threads = select(Conversation.id).where(Conversation.uid == uid).scalar_subquery()
        runs = select(AgentRun.id).where(AgentRun.uid == uid).scalar_subquery()
        messages = (
            select(Message.id)
            .where(or_(Message.uid == uid, Message.conversation_id.in_(threads)))
            .scalar_subquery()
        )
        statements: list[tuple[str, Any]] = [
            ("run_events", delete(RunEvent).where(RunEvent.run_id.in_(runs))),
            ("tool_calls", delete(ToolCall).where(ToolCall.message_id.in_(messages))),
            (
                "messages",
                delete(Message).where(
                    or_(Message.uid == uid, Message.conversation_id.in_(threads))
                ),
            ),
            (
                "subagent_threads",
                delete(SubagentThread).where(
                    or_(
                        SubagentThread.parent_conversation_id.in_(threads),
                        SubagentThread.child_conversation_id.in_(threads),
                    )
                ),
            ),
            ("agent_runs", delete(AgentRun).where(AgentRun.uid == uid)),
            ("conversations", delete(Conversation).where(Conversation.uid == uid)),
            ("memory_versions", delete(MemoryVersion).where(MemoryVersion.uid == uid)),
            ("api_tokens", delete(ApiToken).where(ApiToken.uid == uid)),
            ("login_codes", delete(LoginCode).where(LoginCode.uid == uid)),
            ("user_config", delete(UserConfig).where(UserConfig.uid == uid)),
            ("users", delete(User).where(User.uid == uid)),
        ]
        counts: dict[str, int] = {}
        for table, statement in statements:
            result = await self.session.execute(
                statement.execution_options(synchronize_session=False)
            )
            counts[table] = int(getattr(result, "rowcount", 0) or 0)
        return counts
