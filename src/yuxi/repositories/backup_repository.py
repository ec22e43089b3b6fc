"""What ``yuxi backup`` / ``yuxi restore`` ask of the database: an exported snapshot to dump
from, each user's newest memory version (now, and as of that snapshot), row counts, the schema's
revision and whether a target database is empty.

The snapshot is the one :class:`~yuxi.services.backup.BackupService` hands to ``pg_dump
--snapshot``: the transaction that exported it stays open until the dump has ended, and every
read made in it sees exactly what the dump sees.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.db.models import MemoryVersion, User

__all__ = ["BackupRepository", "MemoryHead"]

#: Schemas PostgreSQL owns; everything else is data this project (or LangGraph) made.
_SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "pg_toast")


@dataclass(frozen=True)
class MemoryHead:
    """A user's newest memory version: the whole file after it, and its hash."""

    uid: str
    seq: int
    content: str
    sha256: str


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class BackupRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def export_snapshot(self) -> str:
        """Turn this transaction into a read-only repeatable-read one and export its snapshot
        (must be the session's first statement). Valid while the transaction lasts."""
        await self._session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        await self._session.execute(text("SET TRANSACTION READ ONLY"))
        return str((await self._session.execute(text("SELECT pg_export_snapshot()"))).scalar_one())

    async def server_version(self) -> tuple[int, str]:
        """``(server_version_num, server_version)``, e.g. ``(180001, "18.1")``."""
        num = (await self._session.execute(text("SHOW server_version_num"))).scalar_one()
        name = (await self._session.execute(text("SHOW server_version"))).scalar_one()
        return int(num), str(name)

    async def user_uids(self) -> list[str]:
        rows = await self._session.execute(select(User.uid).order_by(User.uid))
        return [str(uid) for uid in rows.scalars()]

    async def newest_memory_seq(self, uid: str) -> int:
        """The ``seq`` of the user's newest memory version (0: none yet)."""
        seq = await self._session.execute(
            select(func.coalesce(func.max(MemoryVersion.seq), 0)).where(MemoryVersion.uid == uid)
        )
        return int(seq.scalar_one())

    async def newest_memory_seqs(self) -> dict[str, int]:
        """Every user's newest memory ``seq`` (users without a version are absent)."""
        rows = await self._session.execute(
            select(MemoryVersion.uid, func.max(MemoryVersion.seq)).group_by(MemoryVersion.uid)
        )
        return {str(uid): int(seq) for uid, seq in rows.all()}

    async def memory_head(self, uid: str) -> MemoryHead | None:
        row = (
            await self._session.execute(
                select(MemoryVersion.seq, MemoryVersion.content, MemoryVersion.sha256)
                .where(MemoryVersion.uid == uid)
                .order_by(MemoryVersion.seq.desc())
                .limit(1)
            )
        ).first()
        if row is None:
            return None
        return MemoryHead(uid, int(row.seq), str(row.content), str(row.sha256))

    async def tables(self) -> list[str]:
        """Every ordinary table outside PostgreSQL's own schemas, as ``schema.table``."""
        rows = await self._session.execute(
            text(
                "SELECT schemaname, tablename FROM pg_tables "
                "WHERE schemaname <> ALL(:system) ORDER BY 1, 2"
            ),
            {"system": list(_SYSTEM_SCHEMAS)},
        )
        return [f"{schema}.{table}" for schema, table in rows.all()]

    async def row_counts(self) -> dict[str, int]:
        """Exact row counts of :meth:`tables` (one ``count(*)`` each)."""
        counts = {}
        for name in await self.tables():
            schema, table = name.split(".", 1)
            # Identifiers read from pg_tables, quoted: no user text reaches this statement.
            statement = text(f"SELECT count(*) FROM {_quoted(schema)}.{_quoted(table)}")  # noqa: S608
            counts[name] = int((await self._session.execute(statement)).scalar_one())
        return counts

    async def schema_revision(self) -> str | None:
        """Alembic's revision of this database (``None``: no schema yet)."""
        if "public.alembic_version" not in await self.tables():
            return None
        value = await self._session.execute(text("SELECT version_num FROM alembic_version"))
        return value.scalar_one_or_none()

    async def drop_everything(self) -> None:
        """Drop every schema outside PostgreSQL's own (their tables, functions and extensions
        with them) and leave an empty ``public``: what ``yuxi restore --force`` replaces."""
        rows = await self._session.execute(
            text(
                "SELECT nspname FROM pg_namespace WHERE nspname <> ALL(:system) "
                "AND nspname NOT LIKE 'pg\\_temp\\_%' AND nspname NOT LIKE 'pg\\_toast\\_temp\\_%'"
            ),
            {"system": list(_SYSTEM_SCHEMAS)},
        )
        for (schema,) in rows.all():
            await self._session.execute(text(f"DROP SCHEMA {_quoted(schema)} CASCADE"))
        await self._session.execute(text("CREATE SCHEMA public"))
