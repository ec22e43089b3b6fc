"""Initial schema: users, tokens, config, conversations, messages, tool calls, runs, events.

Revision ID: 0001
Revises: (none)
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("uid", name=op.f("pk_users")),
    )
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=200), server_default="default", nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["uid"], ["users.uid"], name=op.f("fk_api_tokens_uid_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_api_tokens_token_hash")),
    )
    op.create_index(op.f("ix_api_tokens_uid"), "api_tokens", ["uid"], unique=False)
    op.create_table(
        "conversations",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("thread_id", sa.String(length=64), nullable=False),
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("title", sa.String(length=500), server_default="", nullable=False),
        sa.Column("status", sa.String(length=16), server_default="active", nullable=False),
        sa.Column("source", sa.String(length=32), server_default="chat", nullable=False),
        sa.Column("metadata", postgresql.JSONB(), server_default=sa.text("'{}'"), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "source IN ('chat', 'agent_call', 'agent_evaluation')",
            name=op.f("ck_conversations_source"),
        ),
        sa.CheckConstraint(
            "status IN ('active', 'archived', 'deleted')", name=op.f("ck_conversations_status")
        ),
        sa.ForeignKeyConstraint(
            ["uid"], ["users.uid"], name=op.f("fk_conversations_uid_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversations")),
        sa.UniqueConstraint("thread_id", name=op.f("uq_conversations_thread_id")),
    )
    op.create_index(
        op.f("ix_conversations_uid_updated_at"),
        "conversations",
        ["uid", "updated_at"],
        unique=False,
    )
    op.create_table(
        "user_config",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("enable_memory", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["uid"], ["users.uid"], name=op.f("fk_user_config_uid_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_config")),
        sa.UniqueConstraint("uid", name=op.f("uq_user_config_uid")),
    )
    op.create_table(
        "agent_runs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("conversation_thread_id", sa.String(length=64), nullable=False),
        sa.Column("request_id", sa.String(length=128), nullable=False),
        sa.Column("run_type", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), server_default="pending", nullable=False),
        sa.Column(
            "cancel_requested", sa.Boolean(), server_default=sa.text("false"), nullable=False
        ),
        sa.Column("created_by_run_id", sa.String(length=36), nullable=True),
        sa.Column("worker_id", sa.String(length=64), nullable=True),
        sa.Column("attempt", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error_code", sa.String(length=64), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("memory_snapshot_sha256", sa.String(length=64), nullable=True),
        sa.Column("memory_snapshot_bytes", sa.Integer(), nullable=True),
        sa.Column(
            "input_payload", postgresql.JSONB(), server_default=sa.text("'{}'"), nullable=False
        ),
        sa.Column("output", postgresql.JSONB(), nullable=True),
        sa.CheckConstraint(
            "run_type IN ('chat', 'resume', 'subagent')", name=op.f("ck_agent_runs_run_type")
        ),
        sa.CheckConstraint(
            "status IN ('pending', 'running', 'completed', 'failed', 'cancelled', 'interrupted')",
            name=op.f("ck_agent_runs_status"),
        ),
        sa.ForeignKeyConstraint(
            ["conversation_thread_id"],
            ["conversations.thread_id"],
            name=op.f("fk_agent_runs_conversation_thread_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["created_by_run_id"],
            ["agent_runs.id"],
            name=op.f("fk_agent_runs_created_by_run_id_agent_runs"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["uid"], ["users.uid"], name=op.f("fk_agent_runs_uid_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agent_runs")),
        sa.UniqueConstraint("uid", "request_id", name=op.f("uq_agent_runs_uid_request_id")),
    )
    op.create_index(
        "ix_agent_runs_claimable",
        "agent_runs",
        ["created_at"],
        unique=False,
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.create_index(
        "ix_agent_runs_lease",
        "agent_runs",
        ["lease_expires_at"],
        unique=False,
        postgresql_where=sa.text("status = 'running'"),
    )
    op.create_index(
        "uq_agent_runs_one_active_per_thread",
        "agent_runs",
        ["conversation_thread_id"],
        unique=True,
        postgresql_where=sa.text("status IN ('pending', 'running')"),
    )
    op.create_table(
        "messages",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("conversation_id", sa.BigInteger(), nullable=False),
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("message_type", sa.String(length=32), server_default="text", nullable=False),
        sa.Column("content", sa.Text(), server_default="", nullable=False),
        sa.Column("metadata", postgresql.JSONB(), server_default=sa.text("'{}'"), nullable=False),
        sa.Column("image_content", sa.Text(), nullable=True),
        sa.Column("attachments", postgresql.JSONB(), nullable=True),
        sa.Column("run_id", sa.String(length=36), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "role IN ('user', 'assistant', 'system', 'tool')", name=op.f("ck_messages_role")
        ),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_messages_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["uid"], ["users.uid"], name=op.f("fk_messages_uid_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_messages")),
    )
    op.create_index(
        op.f("ix_messages_conversation_id_id"), "messages", ["conversation_id", "id"], unique=False
    )
    op.create_index(
        "ix_messages_uid_id_desc", "messages", ["uid", sa.literal_column("id DESC")], unique=False
    )
    op.create_table(
        "subagent_threads",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("parent_conversation_id", sa.BigInteger(), nullable=False),
        sa.Column("child_conversation_id", sa.BigInteger(), nullable=False),
        sa.Column("created_by_run_id", sa.String(length=36), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["child_conversation_id"],
            ["conversations.id"],
            name=op.f("fk_subagent_threads_child_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["parent_conversation_id"],
            ["conversations.id"],
            name=op.f("fk_subagent_threads_parent_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subagent_threads")),
        sa.UniqueConstraint(
            "child_conversation_id", name=op.f("uq_subagent_threads_child_conversation_id")
        ),
    )
    op.create_index(
        op.f("ix_subagent_threads_parent_conversation_id"),
        "subagent_threads",
        ["parent_conversation_id"],
        unique=False,
    )
    op.create_table(
        "run_events",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("event_type", sa.String(length=32), nullable=False),
        sa.Column("data", postgresql.JSONB(), server_default=sa.text("'{}'"), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["agent_runs.id"],
            name=op.f("fk_run_events_run_id_agent_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_events")),
        sa.UniqueConstraint("run_id", "seq", name=op.f("uq_run_events_run_id_seq")),
    )
    op.create_table(
        "tool_calls",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("message_id", sa.BigInteger(), nullable=False),
        sa.Column("tool_call_id", sa.String(length=128), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("input", postgresql.JSONB(), nullable=True),
        sa.Column("output", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=16), server_default="pending", nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["message_id"],
            ["messages.id"],
            name=op.f("fk_tool_calls_message_id_messages"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tool_calls")),
    )
    op.create_index(
        op.f("ix_tool_calls_message_id_id"), "tool_calls", ["message_id", "id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_tool_calls_message_id_id"), table_name="tool_calls")
    op.drop_table("tool_calls")
    op.drop_table("run_events")
    op.drop_index(op.f("ix_subagent_threads_parent_conversation_id"), table_name="subagent_threads")
    op.drop_table("subagent_threads")
    op.drop_index("ix_messages_uid_id_desc", table_name="messages")
    op.drop_index(op.f("ix_messages_conversation_id_id"), table_name="messages")
    op.drop_table("messages")
    op.drop_index(
        "uq_agent_runs_one_active_per_thread",
        table_name="agent_runs",
        postgresql_where=sa.text("status IN ('pending', 'running')"),
    )
    op.drop_index(
        "ix_agent_runs_lease",
        table_name="agent_runs",
        postgresql_where=sa.text("status = 'running'"),
    )
    op.drop_index(
        "ix_agent_runs_claimable",
        table_name="agent_runs",
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.drop_table("agent_runs")
    op.drop_table("user_config")
    op.drop_index(op.f("ix_conversations_uid_updated_at"), table_name="conversations")
    op.drop_table("conversations")
    op.drop_index(op.f("ix_api_tokens_uid"), table_name="api_tokens")
    op.drop_table("api_tokens")
    op.drop_table("users")
