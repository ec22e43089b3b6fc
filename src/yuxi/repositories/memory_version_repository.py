"""Memory versions: the audit trail of each user's MEMORY.md (never read into a prompt).

Every query is scoped to one uid, so another user's ``version_id`` is simply not found. Rows are
inserted and pruned only by the memory service, under the per-user memory locks; this module
never commits. Also here: the two provenance look-ups a version needs (the user message that
asked for an agent write, and the titles of the threads versions point to).
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.db.models import Conversation, MemoryVersion, Message

__all__ = ["MemoryVersionRepository"]


class MemoryVersionRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def list_newest_first(self, uid: str) -> list[MemoryVersion]:
        """Every retained version of ``uid`` (retention bounds how many there are)."""
        rows = await self.session.execute(
            select(MemoryVersion).where(MemoryVersion.uid == uid).order_by(MemoryVersion.id.desc())
        )
        return list(rows.scalars())

    async def get(self, uid: str, version_id: str) -> MemoryVersion | None:
        row = await self.session.execute(
            select(MemoryVersion).where(
                MemoryVersion.uid == uid, MemoryVersion.version_id == version_id
            )
        )
        return row.scalar_one_or_none()

    async def previous(self, version: MemoryVersion) -> MemoryVersion | None:
        """The retained version recorded just before ``version`` (same user), if any."""
        row = await self.session.execute(
            select(MemoryVersion)
            .where(MemoryVersion.uid == version.uid, MemoryVersion.id < version.id)
            .order_by(MemoryVersion.id.desc())
            .limit(1)
        )
        return row.scalar_one_or_none()

    async def add(self, version: MemoryVersion) -> MemoryVersion:
        """Insert and flush (so ``id`` and ``created_at`` are known before the publish)."""
        self.session.add(version)
        await self.session.flush()
        await self.session.refresh(version, ["created_at"])
        return version

    async def newest_sha256(self, uid: str) -> str | None:
        """The sha256 of the newest version (its content is not loaded)."""
        row = await self.session.execute(
            select(MemoryVersion.sha256)
            .where(MemoryVersion.uid == uid)
            .order_by(MemoryVersion.id.desc())
            .limit(1)
        )
        return row.scalar_one_or_none()

    async def prune(self, uid: str, *, keep: int, max_bytes: int) -> int:
        """Drop the oldest versions beyond the newest ``keep``, then the oldest while the sizes
        of the rest sum to more than ``max_bytes``. The newest version is never dropped.
        Returns how many rows went.

        The kept versions are a newest-first prefix, so one index scan of at most ``keep`` rows
        finds the oldest id to keep and one index range deletes everything older (a window over
        all of the user's rows in ``DELETE … IN (…)`` cost ~5 ms per write in benchmark B1).
        """
        newest = (
            select(
                MemoryVersion.id.label("id"),
                func.row_number().over(order_by=MemoryVersion.id.desc()).label("rank"),
                func.sum(MemoryVersion.size)
                .over(order_by=MemoryVersion.id.desc(), rows=(None, 0))
                .label("kept_bytes"),
            )
            .where(MemoryVersion.uid == uid)
            .order_by(MemoryVersion.id.desc())
            .limit(keep)
            .subquery()
        )
        oldest_kept = (
            select(func.min(newest.c.id))
            .where((newest.c.rank == 1) | (newest.c.kept_bytes <= max_bytes))
            .scalar_subquery()
        )
        result = await self.session.execute(
            delete(MemoryVersion)
            .where(MemoryVersion.uid == uid, MemoryVersion.id < oldest_kept)
            .execution_options(synchronize_session=False)
        )
        return int(getattr(result, "rowcount", 0) or 0)

    # -- provenance look-ups ------------------------------------------------------------------

    async def asking_message_id(self, uid: str, thread_id: str) -> int | None:
        """The newest user message of the thread: the one that asked for an agent's write."""
        row = await self.session.execute(
            select(func.max(Message.id))
            .join(Conversation, Conversation.id == Message.conversation_id)
            .where(
                Conversation.thread_id == thread_id,
                Conversation.uid == uid,
                Message.uid == uid,
                Message.role == "user",
            )
        )
        return row.scalar_one_or_none()

    async def thread_titles(self, uid: str, thread_ids: Collection[str]) -> dict[str, str]:
        """Titles of those of ``thread_ids`` that are still the user's and not deleted."""
        if not thread_ids:
            return {}
        rows = await self.session.execute(
            select(Conversation.thread_id, Conversation.title).where(
                Conversation.uid == uid,
                Conversation.thread_id.in_(list(thread_ids)),
                Conversation.status != "deleted",
            )
        )
        return {row.thread_id: row.title for row in rows}
