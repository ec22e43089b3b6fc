"""Bring a database to the current schema (``yuxi db upgrade``, the test fixtures, ``yuxi run``).

Two owners of tables, one command:

* our schema — Alembic migrations in ``migrations/versions``;
* the LangGraph Postgres checkpointer's tables — created by its own ``setup()``, which keeps its
  own version table (``checkpoint_migrations``) and uses ``CREATE INDEX CONCURRENTLY``, so it runs
  on an autocommit connection after Alembic, never inside an Alembic transaction.

Both are idempotent: running the upgrade twice is a no-op.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import psycopg
from alembic import command
from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
CHECKPOINT_TABLES = (
    "checkpoint_writes",
    "checkpoint_blobs",
    "checkpoints",
    "checkpoint_migrations",
)


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["url"] = url
    return cfg


def setup_checkpointer_sync(url: str) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    with psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
        PostgresSaver(conn).setup()


def upgrade_sync(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)
    if revision == "head":
        setup_checkpointer_sync(url)


def downgrade_sync(url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(url), revision)
    if revision == "base":
        with psycopg.connect(url, autocommit=True) as conn:
            for table in CHECKPOINT_TABLES:
                conn.execute(f"DROP TABLE IF EXISTS {table}")


async def upgrade(url: str, revision: str = "head") -> None:
    # Alembic is synchronous; keep it off the event loop.
    await asyncio.to_thread(upgrade_sync, url, revision)


async def downgrade(url: str, revision: str = "base") -> None:
    await asyncio.to_thread(downgrade_sync, url, revision)
