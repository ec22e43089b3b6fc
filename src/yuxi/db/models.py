"""The relational schema (SQLAlchemy 2 declarative). Alembic migrations mirror it exactly.

Enumerations are ``text`` columns guarded by CHECK constraints rather than PostgreSQL enum types:
adding a value is then a one-line migration and never needs ``ALTER TYPE`` outside a transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import JSON

from yuxi.vocabulary import (
    ACTIVE_RUN_STATUSES,
    CONVERSATION_SOURCES,
    CONVERSATION_STATUSES,
    MEMORY_VERSION_ACTORS,
    MEMORY_VERSION_KINDS,
    MESSAGE_ROLES,
    RUN_STATUSES,
    RUN_TYPES,
)

# JSONB on PostgreSQL, plain JSON elsewhere (the SQLite unit tier of pure query logic).
JSONType = JSON().with_variant(JSONB(), "postgresql")

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


def _now() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)


class User(Base):
    __tablename__ = "users"

    uid: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    created_at: Mapped[datetime] = _now()


class ApiToken(Base):
    """API tokens, stored only as sha256 digests; the plaintext is shown once at creation.

    A token is valid while it is neither revoked nor past ``expires_at`` (NULL: no expiry;
    browser session tokens always have one).
    """

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    uid: Mapped[str] = mapped_column(ForeignKey("users.uid", ondelete="CASCADE"), nullable=False)
    token_hash: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    label: Mapped[str] = mapped_column(String(200), nullable=False, server_default="default")
    created_at: Mapped[datetime] = _now()
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (Index(None, "uid"),)


class LoginCode(Base):
    """A short-lived, single-use login code (what a login link carries instead of a token).

    Stored only as its sha256 digest. Exchanging it sets ``used_at`` once; a used or expired
    code is never accepted again.
    """

    __tablename__ = "login_codes"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    uid: Mapped[str] = mapped_column(ForeignKey("users.uid", ondelete="CASCADE"), nullable=False)
    code_hash: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    created_at: Mapped[datetime] = _now()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (Index(None, "uid"),)


class UserConfig(Base):
    __tablename__ = "user_config"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    uid: Mapped[str] = mapped_column(
        ForeignKey("users.uid", ondelete="CASCADE"), nullable=False, unique=True
    )
    enable_memory: Mapped[bool] = mapped_column(
        Boolean, nullable=False, server_default=text("false"), default=False
    )
    created_at: Mapped[datetime] = _now()
    updated_at: Mapped[datetime] = _now()


class Conversation(Base):
    __tablename__ = "conversations"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    thread_id: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    uid: Mapped[str] = mapped_column(ForeignKey("users.uid", ondelete="CASCADE"), nullable=False)
    title: Mapped[str] = mapped_column(String(500), nullable=False, server_default="")
    status: Mapped[str] = mapped_column(String(16), nullable=False, server_default="active")
    source: Mapped[str] = mapped_column(String(32), nullable=False, server_default="chat")
    #: The owner hid this thread from the history tools (filtered inside their SQL).
    recall_excluded: Mapped[bool] = mapped_column(
        Boolean, nullable=False, server_default=text("false"), default=False
    )
    #: Running totals of the thread's rows in ``message_search`` (how many, how many terms),
    #: kept by triggers (migration 0008): the search's corpus statistics are a sum over threads.
    searchable_messages: Mapped[int] = mapped_column(
        BigInteger, nullable=False, server_default=text("0")
    )
    searchable_terms: Mapped[int] = mapped_column(
        BigInteger, nullable=False, server_default=text("0")
    )
    metadata_: Mapped[dict[str, Any]] = mapped_column(
        "metadata", JSONType, nullable=False, server_default=text("'{}'")
    )
    created_at: Mapped[datetime] = _now()
    updated_at: Mapped[datetime] = _now()
    #: When the thread went to the trash; set exactly while ``status`` is ``deleted`` (migration
    #: 0011). The purge job removes it whole ``YUXI_TRASH_DAYS`` later.
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        CheckConstraint(_in("status", CONVERSATION_STATUSES), name="status"),
        CheckConstraint(_in("source", CONVERSATION_SOURCES), name="source"),
        CheckConstraint("(status = 'deleted') = (deleted_at IS NOT NULL)", name="deleted_at"),
        Index(None, "uid", "updated_at"),
        # The purge job's work list: deleted threads, oldest deletion first.
        Index(
            "ix_conversations_trash",
            "deleted_at",
            "id",
            postgresql_where=text("status = 'deleted'"),
        ),
    )


class SubagentThread(Base):
    """Links a persisted SubAgent child conversation to the parent it was delegated from."""

    __tablename__ = "subagent_threads"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    parent_conversation_id: Mapped[int] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False
    )
    child_conversation_id: Mapped[int] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False, unique=True
    )
    created_by_run_id: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = _now()

    __table_args__ = (Index(None, "parent_conversation_id"),)


class Message(Base):
    __tablename__ = "messages"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    conversation_id: Mapped[int] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False
    )
    #: Denormalised owner, so per-user newest-first scans never touch other users' rows.
    uid: Mapped[str] = mapped_column(ForeignKey("users.uid", ondelete="CASCADE"), nullable=False)
    role: Mapped[str] = mapped_column(String(16), nullable=False)
    message_type: Mapped[str] = mapped_column(String(32), nullable=False, server_default="text")
    content: Mapped[str] = mapped_column(Text, nullable=False, server_default="")
    metadata_: Mapped[dict[str, Any]] = mapped_column(
        "metadata", JSONType, nullable=False, server_default=text("'{}'")
    )
    image_content: Mapped[str | None] = mapped_column(Text)
    attachments: Mapped[list[Any] | None] = mapped_column(JSONType)
    run_id: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = _now()

    __table_args__ = (
        CheckConstraint(_in("role", MESSAGE_ROLES), name="role"),
        Index(None, "conversation_id", "id"),
        Index("ix_messages_uid_id_desc", "uid", text("id DESC")),
    )


class MessageSearch(Base):
    """The terms of one searchable message (user/assistant text), written only by the triggers
    of migration 0008 on ``messages`` through ``yuxi_search_terms`` (migration 0012: the one
    definition of a term, ``yuxi_terms``). Read by the history search; never written by the app."""

    __tablename__ = "message_search"

    message_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("messages.id", ondelete="CASCADE"), primary_key=True
    )
    uid: Mapped[str] = mapped_column(String, nullable=False)
    conversation_id: Mapped[int] = mapped_column(BigInteger, nullable=False)
    run_id: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    terms: Mapped[list[str]] = mapped_column(ARRAY(Text), nullable=False)

    __table_args__ = (
        Index(
            "ix_message_search_uid_created_at",
            "uid",
            text("created_at DESC"),
            text("message_id DESC"),
        ),
        Index(
            "ix_message_search_conversation_created_at",
            "conversation_id",
            text("created_at DESC"),
            text("message_id DESC"),
        ),
        Index(
            "ix_message_search_run_id",
            "run_id",
            postgresql_where=text("run_id IS NOT NULL"),
        ),
        # ix_message_search_uid_terms (GIN on (uid, terms) with btree_gin, else on terms alone)
        # depends on the server; created by migration 0008, not declared here on purpose.
    )


class ToolCall(Base):
    __tablename__ = "tool_calls"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    message_id: Mapped[int] = mapped_column(
        ForeignKey("messages.id", ondelete="CASCADE"), nullable=False
    )
    tool_call_id: Mapped[str] = mapped_column(String(128), nullable=False)
    name: Mapped[str] = mapped_column(String(128), nullable=False)
    input: Mapped[Any] = mapped_column(JSONType, nullable=True)
    output: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), nullable=False, server_default="pending")
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _now()

    __table_args__ = (Index(None, "message_id", "id"),)


class AgentRun(Base):
    __tablename__ = "agent_runs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    uid: Mapped[str] = mapped_column(ForeignKey("users.uid", ondelete="CASCADE"), nullable=False)
    conversation_thread_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.thread_id", ondelete="CASCADE"), nullable=False
    )
    request_id: Mapped[str] = mapped_column(String(128), nullable=False)
    run_type: Mapped[str] = mapped_column(String(16), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False, server_default="pending")
    cancel_requested: Mapped[bool] = mapped_column(
        Boolean, nullable=False, server_default=text("false"), default=False
    )
    created_by_run_id: Mapped[str | None] = mapped_column(
        ForeignKey("agent_runs.id", ondelete="SET NULL")
    )
    #: A token unique to one claim attempt; empty until claimed.
    worker_id: Mapped[str | None] = mapped_column(String(64))
    attempt: Mapped[int] = mapped_column(Integer, nullable=False, server_default=text("0"))
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = _now()
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    error_code: Mapped[str | None] = mapped_column(String(64))
    error_message: Mapped[str | None] = mapped_column(Text)
    memory_snapshot_sha256: Mapped[str | None] = mapped_column(String(64))
    memory_snapshot_bytes: Mapped[int | None] = mapped_column(Integer)
    #: The run's memory write quota used so far (counted under the per-user memory lock).
    memory_writes: Mapped[int] = mapped_column(
        Integer, nullable=False, server_default=text("0"), default=0
    )
    memory_write_bytes: Mapped[int] = mapped_column(
        Integer, nullable=False, server_default=text("0"), default=0
    )
    input_payload: Mapped[dict[str, Any]] = mapped_column(
        JSONType, nullable=False, server_default=text("'{}'")
    )
    output: Mapped[dict[str, Any] | None] = mapped_column(JSONType)

    __table_args__ = (
        CheckConstraint(_in("run_type", RUN_TYPES), name="run_type"),
        CheckConstraint(_in("status", RUN_STATUSES), name="status"),
        # request_id idempotency is per user: one user's ids never collide with another's.
        UniqueConstraint("uid", "request_id"),
        # One active (pending or running) run per thread, enforced by the database.
        Index(
            "uq_agent_runs_one_active_per_thread",
            "conversation_thread_id",
            unique=True,
            postgresql_where=text(_in("status", ACTIVE_RUN_STATUSES)),
        ),
        Index("ix_agent_runs_claimable", "created_at", postgresql_where=text("status = 'pending'")),
        Index(
            "ix_agent_runs_lease", "lease_expires_at", postgresql_where=text("status = 'running'")
        ),
    )


class RunEvent(Base):
    """Ordered events of one run (status, model chunks, tool start/end) for live and replay."""

    __tablename__ = "run_events"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(
        ForeignKey("agent_runs.id", ondelete="CASCADE"), nullable=False
    )
    seq: Mapped[int] = mapped_column(Integer, nullable=False)
    event_type: Mapped[str] = mapped_column(String(32), nullable=False)
    data: Mapped[dict[str, Any]] = mapped_column(
        JSONType, nullable=False, server_default=text("'{}'")
    )
    created_at: Mapped[datetime] = _now()

    __table_args__ = (UniqueConstraint("run_id", "seq"),)


class MemoryVersion(Base):
    """One change of a user's MEMORY.md: its result, who made it and why (never prompt input).

    Recorded under the same per-user locks as the publish it describes. Thread, run and message
    are plain values, not foreign keys: deleting a thread keeps the version (its link then
    resolves to "source no longer available").
    """

    __tablename__ = "memory_versions"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    #: The public id (``mv_`` + 32 hex).
    version_id: Mapped[str] = mapped_column(String(36), nullable=False, unique=True)
    uid: Mapped[str] = mapped_column(ForeignKey("users.uid", ondelete="CASCADE"), nullable=False)
    created_at: Mapped[datetime] = _now()
    actor: Mapped[str] = mapped_column(String(16), nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    run_id: Mapped[str | None] = mapped_column(String(36))
    thread_id: Mapped[str | None] = mapped_column(String(64))
    message_id: Mapped[int | None] = mapped_column(BigInteger)
    tool_call_id: Mapped[str | None] = mapped_column(String(128))
    #: For ``restore`` and ``undo``: the version whose content or change this one goes back to.
    target_version_id: Mapped[str | None] = mapped_column(String(36))
    sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    size: Mapped[int] = mapped_column(Integer, nullable=False)
    parent_sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    #: The whole file after this change ("" after a delete).
    content: Mapped[str] = mapped_column(Text, nullable=False)
    #: This version's place in its user's history: the newest version's ``seq`` + 1.
    seq: Mapped[int] = mapped_column(BigInteger, nullable=False)
    #: ``size`` summed over the user's versions up to this one, pruned ones included: the bytes
    #: of a newest-first run of versions are a difference of two of these (retention, O(1)).
    cum_bytes: Mapped[int] = mapped_column(BigInteger, nullable=False)

    __table_args__ = (
        CheckConstraint(_in("actor", MEMORY_VERSION_ACTORS), name="actor"),
        CheckConstraint(_in("kind", MEMORY_VERSION_KINDS), name="kind"),
        Index("ix_memory_versions_uid_id_desc", "uid", text("id DESC")),
    )
