"""Memory versions: the audit trail of each user's MEMORY.md (never read into a prompt).

Every query is scoped to one uid, so another user's ``version_id`` is simply not found. Rows are
inserted and pruned only by the memory service, under the per-user memory locks; this module
never commits. The write path's statements (:meth:`MemoryVersionRepository.record`, …) are
:class:`~yuxi.repositories._memory_version_writes.VersionWrites`'; :meth:`thread_titles`
resolves the threads versions point to.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.db.models import Conversation, MemoryVersion
from yuxi.repositories._memory_version_writes import (
    EMPTY_SHA256,
    NewVersion,
    Quota,
    VersionWrites,
)

__all__ = ["EMPTY_SHA256", "MemoryVersionRepository", "NewVersion", "Quota"]


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

    # -- the write path (one definition: :class:`VersionWrites`) ---------------------------

    async def record(
        self, version: NewVersion, *, keep: int, max_bytes: int, quota: Quota | None = None
    ) -> NewVersion | None:
        return await VersionWrites(self.session).record(
            version, keep=keep, max_bytes=max_bytes, quota=quota
        )

    async def newest_sha256(self, uid: str) -> str | None:
        return await VersionWrites(self.session).newest_sha256(uid)

    # -- provenance look-ups ------------------------------------------------------------------

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
