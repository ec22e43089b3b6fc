"""Extended statistics: a message's ``conversation_id`` determines its ``uid``.

Every history read filters one thread's messages by both ``conversation_id`` and the caller's
``uid`` (the owner is checked twice, on purpose). Without this PostgreSQL multiplies the two
selectivities as if they were independent, so for a user owning a small share of the table
it expects that share of the thread's rows: a long thread looked like a handful of rows, and a
read of a window fetched and sorted the whole thread instead of walking
``(conversation_id, id)`` and stopping. A functional-dependency statistic tells the planner
the second filter removes nothing (what it bought: ``docs/performance.md``).

``ANALYZE messages`` fills it now (a sample of the table, quick even on a large one) instead of
at the next autovacuum. Running the migration twice is harmless (``IF NOT EXISTS``).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

STATISTICS_NAME = "st_messages_conversation_id_uid"


def upgrade() -> None:
    op.execute(
        f"CREATE STATISTICS IF NOT EXISTS {STATISTICS_NAME} (dependencies) "
        "ON conversation_id, uid FROM messages"
    )
    op.execute("ANALYZE messages")


def downgrade() -> None:
    op.execute(f"DROP STATISTICS IF EXISTS {STATISTICS_NAME}")
