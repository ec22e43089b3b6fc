"""The trash (issue 36 §1): ``conversations.deleted_at``, when a thread was deleted.

A deleted thread stays restorable for ``YUXI_TRASH_DAYS`` from this moment, then the purge job
removes it whole. The column is set exactly while the thread is deleted (a check constraint
says so: ``status = 'deleted'`` if and only if ``deleted_at`` is set), so a restore clears it.
Threads deleted before this revision get their ``updated_at``: a deletion set the status and
touched ``updated_at`` in one statement, and nothing touches a deleted thread afterwards, so it
is the time of the deletion. The purge job finds its work through a partial index on
``(deleted_at, id)`` over deleted threads only.

Running it twice changes nothing: the column and the index are added only when missing, the
back-fill touches only deleted threads without a time, and the check is dropped and re-created.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_CHECK = "ck_conversations_deleted_at"
_INDEX = "ix_conversations_trash"


def upgrade() -> None:
    op.execute("ALTER TABLE conversations ADD COLUMN IF NOT EXISTS deleted_at timestamptz")
    op.execute(
        "UPDATE conversations SET deleted_at = updated_at "
        "WHERE status = 'deleted' AND deleted_at IS NULL"
    )
    op.execute(f"ALTER TABLE conversations DROP CONSTRAINT IF EXISTS {_CHECK}")
    op.execute(
        f"ALTER TABLE conversations ADD CONSTRAINT {_CHECK} "
        "CHECK ((status = 'deleted') = (deleted_at IS NOT NULL))"
    )
    op.execute(
        f"CREATE INDEX IF NOT EXISTS {_INDEX} ON conversations (deleted_at, id) "
        "WHERE status = 'deleted'"
    )


def downgrade() -> None:
    op.execute(f"DROP INDEX IF EXISTS {_INDEX}")
    op.execute(f"ALTER TABLE conversations DROP CONSTRAINT IF EXISTS {_CHECK}")
    op.execute("ALTER TABLE conversations DROP COLUMN IF EXISTS deleted_at")
