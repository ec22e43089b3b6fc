"""Trigram GIN index on messages.content for the history search — only where pg_trgm exists.

``search_thread_messages`` is a literal ``ILIKE '%q%'`` over the caller's visible messages. With
the ``(uid, id DESC)`` btree alone its cost grows with the user's history (a miss reads every
row of the user); a ``gin_trgm_ops`` index lets PostgreSQL find candidate rows for any query of
3 or more characters directly. It is an index on the existing table, not a new
store: results are identical with or without it.

Where the server has no ``pg_trgm`` (the embedded PostgreSQL 16 of earlier releases), or the
extension cannot be created (no privilege), this migration does nothing and the search keeps
using the btree: same results, cost growing with history. Because the index exists only on some
servers it is not declared in ``yuxi.db.models``; the models/migrations comparison skips it by
name. Migration 0005 replaces it with a per-user index where ``btree_gin`` exists too.

The index is built ``CONCURRENTLY`` (outside the migration transaction), so upgrading a large
live database does not block writes to ``messages``; an invalid leftover of an interrupted
build is dropped and rebuilt.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

INDEX_NAME = "ix_messages_content_trgm"

_log = logging.getLogger("alembic.runtime.migration")


def _trgm_schema(bind: sa.Connection) -> str | None:
    row = bind.execute(
        sa.text(
            "SELECT n.nspname FROM pg_extension e "
            "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'"
        )
    ).first()
    return None if row is None else str(row[0])


def _ensure_trgm(bind: sa.Connection) -> str | None:
    """Schema of pg_trgm, creating the extension when the server offers it; else ``None``."""
    schema = _trgm_schema(bind)
    if schema is not None:
        return schema
    available = bind.execute(
        sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'")
    ).first()
    if available is None:
        _log.info("pg_trgm is not available on this server; %s not created", INDEX_NAME)
        return None
    try:
        with bind.begin_nested():
            bind.execute(sa.text("CREATE EXTENSION IF NOT EXISTS pg_trgm"))
    except sa.exc.DBAPIError as exc:
        _log.warning("cannot create extension pg_trgm (%s); %s not created", exc.orig, INDEX_NAME)
        return None
    return _trgm_schema(bind)


def upgrade() -> None:
    bind = op.get_bind()
    schema = _ensure_trgm(bind)
    if schema is None:
        return
    quoted = bind.dialect.identifier_preparer.quote_identifier(schema)
    opclass = f"{quoted}.gin_trgm_ops"
    with op.get_context().autocommit_block():
        invalid = bind.execute(
            sa.text(
                "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE c.relname = :name AND NOT i.indisvalid"
            ),
            {"name": INDEX_NAME},
        ).first()
        if invalid is not None:
            op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX_NAME}")
        op.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {INDEX_NAME} "
            f"ON messages USING gin (content {opclass})"
        )


def downgrade() -> None:
    # The extension is left installed: other objects may use it, and it holds no data.
    op.execute(f"DROP INDEX IF EXISTS {INDEX_NAME}")
