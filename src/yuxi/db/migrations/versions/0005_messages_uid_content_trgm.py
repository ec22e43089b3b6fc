"""Per-user trigram index for the history search: GIN on ``(uid, content gin_trgm_ops)``.

0002's global ``gin_trgm_ops`` index on ``content`` finds the candidate rows of *every* user and
only then filters by ``uid``: a term common across users but rare (or absent) for the caller
costs as much as the whole table's matches. With ``btree_gin`` the owner becomes
a key of the same GIN index, so the scan intersects the caller's posting list with the
trigrams' inside the index and its cost follows the caller's matches, not the table's.

Every history search filters by ``uid``, so the new index serves every query the global one
served: the global one is dropped (it only cost write time and disk). The index is not partial
(e.g. only visible roles/types): the hidden rows are a few percent of the table, and a partial
index is usable only when the planner can prove the query's IN lists imply its predicate, which
fails for bound parameters in generic plans.

Where ``pg_trgm`` or ``btree_gin`` is missing (or cannot be created) the migration only logs
and leaves 0002's state alone: same results, a slower search. Built ``CONCURRENTLY`` (outside
the migration transaction); an invalid leftover of an interrupted build is dropped and rebuilt,
so running the migration twice is harmless. Not declared in ``yuxi.db.models`` because it
exists only on some servers; the models/migrations comparison skips it by name.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from yuxi.db.migration_support import ensure_extension, extension_schema, index_is_invalid

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

INDEX_NAME = "ix_messages_uid_content_trgm"
GLOBAL_INDEX_NAME = "ix_messages_content_trgm"  # migration 0002's


def _build(bind: sa.Connection, name: str, columns: str) -> None:
    """``CREATE INDEX CONCURRENTLY`` ``name``, first dropping an invalid leftover of it."""
    with op.get_context().autocommit_block():
        if index_is_invalid(bind, name):
            op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
        op.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON messages USING gin ({columns})"
        )


def upgrade() -> None:
    bind = op.get_bind()
    without = f"{INDEX_NAME} not created"
    trgm = ensure_extension(bind, "pg_trgm", without=without)
    if trgm is None or ensure_extension(bind, "btree_gin", without=without) is None:
        return
    opclass = bind.dialect.identifier_preparer.quote_identifier(trgm) + ".gin_trgm_ops"
    # uid takes btree_gin's default operator class for its type.
    _build(bind, INDEX_NAME, f"uid, content {opclass}")
    with op.get_context().autocommit_block():
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {GLOBAL_INDEX_NAME}")


def downgrade() -> None:
    """Back to 0004's state: the global trigram index where pg_trgm exists, no per-user one."""
    bind = op.get_bind()
    trgm = extension_schema(bind, "pg_trgm")
    if trgm is not None:
        opclass = bind.dialect.identifier_preparer.quote_identifier(trgm) + ".gin_trgm_ops"
        _build(bind, GLOBAL_INDEX_NAME, f"content {opclass}")
    op.execute(f"DROP INDEX IF EXISTS {INDEX_NAME}")
