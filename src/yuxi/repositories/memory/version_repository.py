"""Memory versions: the audit trail of each user's MEMORY.md (never read into a prompt).

Every query is scoped to one uid, so another user's ``version_id`` is simply not found. Rows are
inserted and pruned only by the memory service, under the per-user memory locks; this module
never commits. Writing is one statement (:meth:`MemoryVersionRepository.record`: gap check,
insert, asking message, quota, retention from ``seq`` and ``cum_bytes``); :meth:`thread_titles`
resolves the threads versions point to.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import BigInteger, Integer, String, Text, bindparam, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.db.models import Conversation, MemoryVersion
from yuxi.db.prebuilt import PrebuiltStatement

__all__ = ["EMPTY_SHA256", "MemoryVersionRepository", "NewVersion", "Quota"]

#: The sha256 of no bytes: the parent of a user's first version.
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


@dataclass(frozen=True)
class Quota:
    """One memory write of ``added_bytes`` to count on the run ``run_id``."""

    run_id: str
    added_bytes: int


@dataclass(slots=True)
class NewVersion:
    """A ``memory_versions`` row the write path inserts: its columns as plain values, and
    ``id``, ``created_at`` (and a looked-up ``message_id``) once it is in.

    Not the ORM's :class:`~yuxi.db.models.MemoryVersion`: the row is written by one Core
    statement, not added to the session, so nothing needs an instrumented instance. Read by
    the same attribute names (``version_view``).
    """

    version_id: str
    uid: str
    actor: str
    kind: str
    sha256: str
    size: int
    parent_sha256: str
    content: str
    run_id: str | None = None
    thread_id: str | None = None
    message_id: int | None = None
    tool_call_id: str | None = None
    target_version_id: str | None = None
    id: int | None = None
    created_at: datetime | None = None


_S = String()
#: Built once with typed bind parameters and run prebuilt (:mod:`yuxi.db.prebuilt`: it is on the
#: hot path of every write); see :meth:`MemoryVersionRepository.record` for what it does.
_RECORD_SQL = text(
    """
WITH newest AS (
    SELECT sha256, seq, cum_bytes FROM memory_versions WHERE uid = :uid ORDER BY id DESC LIMIT 1
), fits AS (
    SELECT COALESCE((SELECT sha256 FROM newest), :empty_sha256) = :parent_sha256 AS ok,
        COALESCE((SELECT seq FROM newest), 0) + 1 AS seq,
        COALESCE((SELECT cum_bytes FROM newest), 0) + :size AS cum_bytes
), quota AS (
    UPDATE agent_runs
    SET memory_writes = memory_writes + 1, memory_write_bytes = memory_write_bytes + :quota_bytes
    WHERE id = :quota_run AND (SELECT ok FROM fits)
), added AS (
    INSERT INTO memory_versions (version_id, uid, actor, kind, run_id, thread_id, message_id,
        tool_call_id, target_version_id, sha256, size, parent_sha256, content, seq, cum_bytes)
    SELECT :version_id, :uid, :actor, :kind, :run_id, :thread_id,
        COALESCE(:message_id, (
            SELECT max(m.id) FROM messages m JOIN conversations c ON c.id = m.conversation_id
            WHERE c.thread_id = :ask_thread AND c.uid = :uid AND m.uid = :uid AND m.role = 'user'
        )),
        :tool_call_id, :target_version_id, :sha256, :size, :parent_sha256, :content,
        fits.seq, fits.cum_bytes
    FROM fits WHERE fits.ok
    RETURNING id, created_at, message_id
), oldest_kept AS (
    SELECT v.id FROM memory_versions v, fits
    WHERE v.uid = :uid AND v.seq > fits.seq - :keep
        AND v.cum_bytes - v.size >= fits.cum_bytes - :max_bytes
    ORDER BY v.id LIMIT 1
), pruned AS (
    DELETE FROM memory_versions
    WHERE uid = :uid AND (SELECT ok FROM fits)
        AND id < COALESCE((SELECT id FROM oldest_kept), 9223372036854775807)
)
SELECT fits.ok AS fits, added.id, added.created_at, added.message_id
FROM fits LEFT JOIN added ON true
"""
).bindparams(
    *(
        bindparam(name, type_=_S)
        for name in (
            "uid",
            "actor",
            "kind",
            "version_id",
            "run_id",
            "thread_id",
            "ask_thread",
            "tool_call_id",
            "target_version_id",
            "sha256",
            "parent_sha256",
            "empty_sha256",
            "quota_run",
        )
    ),
    bindparam("content", type_=Text()),
    bindparam("message_id", type_=BigInteger()),
    *(bindparam(name, type_=Integer()) for name in ("size", "quota_bytes", "keep", "max_bytes")),
)
_RECORD = PrebuiltStatement(_RECORD_SQL)


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

    # -- the write path -----------------------------------------------------------------------

    async def record(
        self, version: NewVersion, *, keep: int, max_bytes: int, quota: Quota | None = None
    ) -> NewVersion | None:
        """Insert ``version`` if the user's newest version is its parent, in one statement that
        also (all or nothing):

        * sets ``message_id`` to the newest user message of ``version.thread_id`` when it is
          an agent's write whose ``message_id`` is unset (the message that asked);
        * counts ``quota`` (one write of ``added_bytes``) on the run row;
        * numbers the row after the user's newest (``seq`` + 1, ``cum_bytes`` + ``size``);
        * prunes as if run right after the insert: only the newest ``keep`` rows stay, then
          the oldest go while their sizes sum to more than ``max_bytes``, the new row never.
          Both rules keep a newest-first run, so an older row stays exactly when
          ``seq > new seq - keep`` and ``cum_bytes - size >= new cum_bytes - max_bytes`` (the
          bytes from it to the new row fit): the first such row by ``id`` is found from the
          oldest up, and everything older goes — about two rows read, however many are kept.
          (The statement's snapshot does not see the row it inserts, so it is never pruned.)

        Returns the row with ``id``, ``created_at`` and ``message_id`` set, or ``None`` — and
        then nothing was written — when the newest version is not ``version.parent_sha256``
        (the history fell behind the file: the caller repairs the gap and calls again).
        """
        params = {
            "version_id": version.version_id,
            "uid": version.uid,
            "actor": version.actor,
            "kind": version.kind,
            "run_id": version.run_id,
            "thread_id": version.thread_id,
            "message_id": version.message_id,
            # Only an agent's write was asked for by a message (a ``forget`` names its thread
            # but no message asked for it).
            "ask_thread": (
                version.thread_id
                if version.message_id is None and version.actor == "agent"
                else None
            ),
            "tool_call_id": version.tool_call_id,
            "target_version_id": version.target_version_id,
            "sha256": version.sha256,
            "size": version.size,
            "parent_sha256": version.parent_sha256,
            "content": version.content,
            "empty_sha256": EMPTY_SHA256,
            "quota_run": None if quota is None else quota.run_id,
            "quota_bytes": 0 if quota is None else quota.added_bytes,
            "keep": keep,
            "max_bytes": max_bytes,
        }
        row = await _RECORD.one(self.session, params)
        if not row.fits:
            return None
        version.id, version.created_at, version.message_id = row.id, row.created_at, row.message_id
        return version

    async def newest_sha256(self, uid: str) -> str | None:
        """The sha256 of the user's newest version (its content is not read)."""
        row = await self.session.execute(
            select(MemoryVersion.sha256)
            .where(MemoryVersion.uid == uid)
            .order_by(MemoryVersion.id.desc())
            .limit(1)
        )
        return row.scalar_one_or_none()

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
