"""Migrations run on an empty database, down to nothing, and up again."""

from __future__ import annotations

import psycopg

from yuxi.db.migrate import CHECKPOINT_TABLES, downgrade_sync, upgrade_sync
from yuxi.db.models import Base


def _tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        ).fetchall()
    return {r[0] for r in rows}


def _indexes(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = 'public'"
        ).fetchall()
    return {r[0] for r in rows}


_SERVER_DEPENDENT = (
    "ix_messages_content_trgm",
    "ix_messages_uid_content_trgm",
    "ix_message_search_uid_terms",
)


def test_upgrade_downgrade_upgrade_round_trip(empty_database_url: str) -> None:
    url = empty_database_url
    upgrade_sync(url)
    first_tables, first_indexes = _tables(url), _indexes(url)
    assert set(Base.metadata.tables) <= first_tables
    assert set(CHECKPOINT_TABLES) <= first_tables
    assert "uq_agent_runs_one_active_per_thread" in first_indexes
    downgrade_sync(url)
    assert _tables(url) <= {"alembic_version"}
    upgrade_sync(url)
    assert _tables(url) == first_tables
    assert _indexes(url) == first_indexes


def test_upgrade_twice_is_a_no_op(empty_database_url: str) -> None:
    upgrade_sync(empty_database_url)
    before = _indexes(empty_database_url)
    upgrade_sync(empty_database_url)
    assert _indexes(empty_database_url) == before


def test_models_match_migrations(empty_database_url: str) -> None:
    """Autogenerate against the migrated schema finds nothing to do: models == migrations."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlalchemy import create_engine

    from yuxi.db.engine import sqlalchemy_url

    upgrade_sync(empty_database_url)
    engine = create_engine(sqlalchemy_url(empty_database_url))
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn,
            # LangGraph's checkpoint tables are owned by its own setup(), not by our models; the
            # trigram indexes of migrations 0002/0005 exist only where pg_trgm does.
            opts={
                "include_name": lambda name, type_, _: (
                    not str(name).startswith("checkpoint") and name not in _SERVER_DEPENDENT
                )
            },
        )
        diff = compare_metadata(context, Base.metadata)
    engine.dispose()
    assert diff == []


def test_0004_revokes_the_never_expiring_demo_tokens_of_earlier_runs(
    empty_database_url: str,
) -> None:
    """Earlier ``yuxi run`` starts minted one never-expiring token per start (label ``make
    run``) and printed it in a URL; the migration revokes those and only those."""
    url = empty_database_url
    upgrade_sync(url, "0003")
    with psycopg.connect(url) as conn:
        conn.execute("INSERT INTO users (uid, name) VALUES ('demo', 'Demo'), ('u_1', 'One')")
        conn.execute(
            "INSERT INTO api_tokens (uid, token_hash, label) VALUES "
            "('demo', repeat('a', 64), 'make run'), ('demo', repeat('b', 64), 'make run'), "
            "('demo', repeat('c', 64), 'default'), ('u_1', repeat('d', 64), 'make run')"
        )
    upgrade_sync(url)
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT left(token_hash, 1), revoked_at IS NOT NULL, expires_at FROM api_tokens "
            "ORDER BY token_hash"
        ).fetchall()
    assert rows == [("a", True, None), ("b", True, None), ("c", False, None), ("d", False, None)]
