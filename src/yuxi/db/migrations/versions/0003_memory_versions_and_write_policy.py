"""Memory versions (issue 11) and the server-side write policy columns (issue 12).

* ``memory_versions``: every change of a user's MEMORY.md with its provenance and content;
* ``conversations.recall_excluded``: the owner hid a thread from the history tools;
* ``agent_runs.memory_writes`` / ``memory_write_bytes``: the run's memory write quota used.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "memory_versions",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("version_id", sa.String(length=36), nullable=False),
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("actor", sa.String(length=16), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=True),
        sa.Column("thread_id", sa.String(length=64), nullable=True),
        sa.Column("message_id", sa.BigInteger(), nullable=True),
        sa.Column("tool_call_id", sa.String(length=128), nullable=True),
        sa.Column("target_version_id", sa.String(length=36), nullable=True),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("parent_sha256", sa.String(length=64), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.CheckConstraint(
            "actor IN ('agent', 'user', 'system')", name=op.f("ck_memory_versions_actor")
        ),
        sa.CheckConstraint(
            "kind IN ('add', 'replace', 'edit', 'delete', 'restore', 'undo', 'recovered')",
            name=op.f("ck_memory_versions_kind"),
        ),
        sa.ForeignKeyConstraint(
            ["uid"], ["users.uid"], name=op.f("fk_memory_versions_uid_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memory_versions")),
        sa.UniqueConstraint("version_id", name=op.f("uq_memory_versions_version_id")),
    )
    op.create_index(
        "ix_memory_versions_uid_id_desc",
        "memory_versions",
        ["uid", sa.literal_column("id DESC")],
        unique=False,
    )
    op.add_column(
        "conversations",
        sa.Column("recall_excluded", sa.Boolean(), server_default=sa.text("false"), nullable=False),
    )
    op.add_column(
        "agent_runs",
        sa.Column("memory_writes", sa.Integer(), server_default=sa.text("0"), nullable=False),
    )
    op.add_column(
        "agent_runs",
        sa.Column("memory_write_bytes", sa.Integer(), server_default=sa.text("0"), nullable=False),
    )


def downgrade() -> None:
    op.drop_column("agent_runs", "memory_write_bytes")
    op.drop_column("agent_runs", "memory_writes")
    op.drop_column("conversations", "recall_excluded")
    op.drop_index("ix_memory_versions_uid_id_desc", table_name="memory_versions")
    op.drop_table("memory_versions")
