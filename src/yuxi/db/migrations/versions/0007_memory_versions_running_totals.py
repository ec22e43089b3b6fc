"""Memory versions carry their place in the user's history and a running byte total.

* ``seq``: 1, 2, 3, … per user, one more than the user's newest version when it was recorded;
* ``cum_bytes``: the sum of ``size`` over the user's versions up to and including this one,
  pruned ones included.

Retention (keep the newest ``MEMORY_VERSIONS_KEEP``, then drop the oldest while the kept
contents sum to more than ``MEMORY_VERSIONS_MAX_BYTES``) then needs no scan of the retained
versions on each write: the kept versions are a newest-first run, its length is a difference
of two ``seq`` and its bytes a difference of two ``cum_bytes``. Before this, every memory write
read the sizes of the user's newest kept versions (the lookup before and after:
``docs/performance.md``).

Existing rows are numbered per user in ``id`` order (only rows without a number: running it
twice changes nothing).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "ALTER TABLE memory_versions ADD COLUMN IF NOT EXISTS seq bigint, "
        "ADD COLUMN IF NOT EXISTS cum_bytes bigint"
    )
    op.execute(
        """
        UPDATE memory_versions m
        SET seq = numbered.seq, cum_bytes = numbered.cum_bytes
        FROM (
            SELECT id,
                row_number() OVER (PARTITION BY uid ORDER BY id) AS seq,
                sum(size) OVER (PARTITION BY uid ORDER BY id) AS cum_bytes
            FROM memory_versions
        ) numbered
        WHERE m.id = numbered.id AND (m.seq IS NULL OR m.cum_bytes IS NULL)
        """
    )
    op.execute(
        "ALTER TABLE memory_versions ALTER COLUMN seq SET NOT NULL, "
        "ALTER COLUMN cum_bytes SET NOT NULL"
    )


def downgrade() -> None:
    op.execute(
        "ALTER TABLE memory_versions DROP COLUMN IF EXISTS seq, DROP COLUMN IF EXISTS cum_bytes"
    )
