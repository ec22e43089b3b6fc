"""Cold caches for B4: what "cold" means, and how the bench gets there before each sample.

Cold = none of the pages of ``messages``, ``message_search`` (where migration 0008 made it),
``conversations``, ``subagent_threads``, their TOAST tables and their indexes are in
PostgreSQL's shared buffers nor in the operating system's page cache when the query starts;
the catalog, the connection pool and the prepared statements stay warm (as after a restart of a
busy server's caches, not of the server). Before each cold sample:

1. ``CHECKPOINT``, so no page of those relations is dirty (a dirty page cannot be dropped);
2. shared buffers: ``pg_buffercache_evict_relation`` (PostgreSQL 18) when available, else
   ``pg_prewarm`` of a ballast table of 4x ``shared_buffers``, which pushes the clock sweep
   through every buffer (the residual buffers of the relations are counted and reported);
3. OS page cache: ``posix_fadvise(POSIX_FADV_DONTNEED)`` on every segment file of the relations
   (needs read access to the data directory: the embedded server's owner, or root).

When a step is impossible on this server, :attr:`Evictor.method` says which steps ran and the
report prints it next to the numbers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psycopg

RELATIONS = ("messages", "message_search", "conversations", "subagent_threads")
BALLAST = "b4_cold_ballast"


class Evictor:
    """Drops the history tables' pages from PostgreSQL's and the OS's caches (see module docs)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn  # autocommit
        self.steps: list[str] = []
        self._evict_relation = self._has_function("pg_buffercache_evict_relation")
        self._buffercache = self._extension("pg_buffercache")
        self._prewarm = not self._evict_relation and self._extension("pg_prewarm")
        self._data_dir = self._readable_data_dir()
        if self._prewarm:
            self._make_ballast()

    # -- setup ----------------------------------------------------------------------------

    def _extension(self, name: str) -> bool:
        try:
            self.conn.execute(f"CREATE EXTENSION IF NOT EXISTS {name}")
        except psycopg.Error:
            return False
        return True

    def _has_function(self, name: str) -> bool:
        self._extension("pg_buffercache")
        row = self.conn.execute("SELECT 1 FROM pg_proc WHERE proname = %s", (name,)).fetchone()
        return row is not None

    def _readable_data_dir(self) -> Path | None:
        try:
            row = self.conn.execute("SHOW data_directory").fetchone()
        except psycopg.Error:
            return None
        path = Path(str(row[0])) if row else None
        return path if path is not None and os.access(path, os.R_OK | os.X_OK) else None

    def _make_ballast(self) -> None:
        row = self.conn.execute(
            "SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers'"
        ).fetchone()
        target = 4 * int(row[0]) if row else 512 * 2**20
        self.conn.execute(f"DROP TABLE IF EXISTS {BALLAST}")
        # ~1 KB rows: target / 1 KB of them.
        self.conn.execute(
            "CREATE UNLOGGED TABLE b4_cold_ballast AS SELECT g AS id, repeat('x', 1000) AS pad "
            "FROM generate_series(1, %s) g",
            (max(1, target // 1100),),
        )

    def drop_ballast(self) -> None:
        if self._prewarm:
            self.conn.execute(f"DROP TABLE IF EXISTS {BALLAST}")

    @property
    def method(self) -> str:
        shared = (
            "pg_buffercache_evict_relation"
            if self._evict_relation
            else "pg_prewarm ballast 4x shared_buffers"
            if self._prewarm
            else "shared buffers NOT evicted"
        )
        os_cache = (
            "posix_fadvise DONTNEED" if self._data_dir is not None else "OS cache NOT evicted"
        )
        return f"CHECKPOINT; {shared}; {os_cache}"

    # -- eviction -------------------------------------------------------------------------

    def _relation_oids(self) -> list[tuple[int, str]]:
        """The relations that exist here (``message_search`` came with migration 0008), their
        indexes and TOAST tables (long messages live there), with their files."""
        rows = self.conn.execute(
            "WITH rel AS (SELECT to_regclass(name) AS oid FROM unnest(%s::text[]) AS name), "
            "base AS (SELECT oid FROM rel WHERE oid IS NOT NULL "
            "  UNION SELECT reltoastrelid FROM pg_class WHERE oid IN (SELECT oid FROM rel) "
            "  AND reltoastrelid <> 0) "
            "SELECT c.oid::bigint, pg_relation_filepath(c.oid) FROM pg_class c "
            "WHERE c.oid IN (SELECT oid FROM base) "
            "   OR c.oid IN (SELECT indexrelid FROM pg_index "
            "                WHERE indrelid IN (SELECT oid FROM base))",
            (list(RELATIONS),),
        ).fetchall()
        return [(int(oid), str(path)) for oid, path in rows if path]

    def resident_buffers(self) -> int | None:
        """Shared buffers still holding a page of the relations (``None``: cannot tell)."""
        if not self._buffercache:
            return None
        row = self.conn.execute(
            "SELECT count(*) FROM pg_buffercache b JOIN pg_class c "
            "ON b.relfilenode = pg_relation_filenode(c.oid) "
            "WHERE b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND c.oid = ANY(%s::oid[])",
            ([oid for oid, _ in self._relation_oids()],),
        ).fetchone()
        return int(row[0]) if row else None

    def evict(self) -> None:
        self.conn.execute("CHECKPOINT")
        relations = self._relation_oids()
        if self._evict_relation:
            for oid, _ in relations:
                self.conn.execute("SELECT pg_buffercache_evict_relation(%s::regclass)", (oid,))
        elif self._prewarm:
            self.conn.execute("SELECT pg_prewarm(%s)", (BALLAST,))
        if self._data_dir is not None:
            for _, rel in relations:
                _fadvise_dontneed(self._data_dir / rel)


def _fadvise_dontneed(base: Path) -> None:
    """Drop every segment file of one relation (``base``, ``base.1``, …) from the page cache."""
    segment = 0
    while True:
        path = base if segment == 0 else base.with_name(f"{base.name}.{segment}")
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        segment += 1
