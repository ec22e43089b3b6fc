"""Migration 0005: the per-user trigram index replaces 0002's global one, where the server can."""

from __future__ import annotations

import psycopg
import pytest
from alembic import command

from yuxi.db.migrate import alembic_config, downgrade_sync, upgrade_sync

PER_USER = "ix_messages_uid_content_trgm"
GLOBAL = "ix_messages_content_trgm"


def _index_defs(url: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'messages'"
        ).fetchall()
    return {str(name): str(definition) for name, definition in rows}


def _can_build(url: str) -> bool:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT name FROM pg_available_extensions WHERE name IN ('pg_trgm', 'btree_gin')"
        ).fetchall()
    return len(rows) == 2


def _invalidate(url: str, name: str) -> None:
    """Mark ``name`` invalid, as an interrupted CREATE INDEX CONCURRENTLY leaves it."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", (name,)
        )


def test_0005_builds_the_per_user_index_and_drops_the_global_one(
    empty_database_url: str,
) -> None:
    url = empty_database_url
    if not _can_build(url):
        pytest.skip("this server has no pg_trgm/btree_gin: 0005 only logs")
    upgrade_sync(url, "0004")
    assert GLOBAL in _index_defs(url)
    upgrade_sync(url, "0005")  # 0008 replaces this index with the ranked search's
    defs = _index_defs(url)
    assert GLOBAL not in defs
    assert "USING gin (uid, content " in defs[PER_USER] and "gin_trgm_ops" in defs[PER_USER]
    # An interrupted build's invalid leftover is dropped and rebuilt by running 0005 again.
    _invalidate(url, PER_USER)
    command.stamp(alembic_config(url), "0004")
    upgrade_sync(url, "0005")
    with psycopg.connect(url) as conn:
        valid = conn.execute(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = %s::regclass", (PER_USER,)
        ).fetchone()
    assert valid == (True,)
    # 0008 drops it; downgrading below 0008 builds it again.
    upgrade_sync(url)
    assert PER_USER not in _index_defs(url)
    downgrade_sync(url, "0007")
    assert "USING gin (uid, content " in _index_defs(url)[PER_USER]
    # Downgrade: back to 0004's global index.
    downgrade_sync(url, "0004")
    defs = _index_defs(url)
    assert GLOBAL in defs and PER_USER not in defs
