"""Database URLs and the async engine. Nothing is created at import time."""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from yuxi.errors import ConfigurationError


def sqlalchemy_url(url: str) -> URL:
    """``postgresql://…`` (libpq style) → the psycopg 3 SQLAlchemy URL."""
    try:
        parsed = make_url(url)
    except Exception as exc:
        raise ConfigurationError(f"not a database URL: {exc}") from exc
    if parsed.get_backend_name() != "postgresql":
        raise ConfigurationError(f"only PostgreSQL is supported, got {parsed.get_backend_name()!r}")
    return parsed.set(drivername="postgresql+psycopg")


def libpq_url(url: str) -> str:
    """The same server as a libpq URL (for psycopg and the LangGraph checkpointer)."""
    parsed = sqlalchemy_url(url).set(drivername="postgresql")
    return parsed.render_as_string(hide_password=False)


def create_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    return create_async_engine(
        sqlalchemy_url(url),
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
        # SQL parameters (memory text, messages) never reach an error message or a log line
        hide_parameters=True,
        # A statement stuck behind a lock must not hang a request forever. Custom plans only:
        # psycopg prepares a statement after 5 runs, and PostgreSQL's generic plan for the
        # history search (one user's rows, a LIKE pattern) scans all of that user's messages —
        # 1,230x slower at p95 than the custom plan at 1M rows (benchmarks/, B4).
        connect_args={
            "options": "-c lock_timeout=15000 -c statement_timeout=60000"
            " -c plan_cache_mode=force_custom_plan"
        },
    )


def create_session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
