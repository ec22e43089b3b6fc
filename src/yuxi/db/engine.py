"""Database URLs and the async engine. Nothing is created at import time."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import InvalidatePoolError
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


#: A pooled connection idle longer than this is pinged before it is handed out.
PING_AFTER_IDLE_SECONDS = 2.0
_IDLE_SINCE = "yuxi_idle_since"


def ping_idle_connections(
    engine: Engine, *, after_seconds: float = PING_AFTER_IDLE_SECONDS
) -> None:
    """Ping a pooled connection on checkout only when it sat idle longer than ``after_seconds``.

    SQLAlchemy's ``pool_pre_ping`` pings on *every* checkout: ``SELECT 1`` (psycopg sends
    ``BEGIN`` before it), one more round trip on every unit of work, which a memory write pays
    measurably (``docs/performance.md``).
    A connection back in the pool moments ago is almost surely alive. What this guarantees and
    what it does not:

    * a connection idle longer than ``after_seconds`` (or after a server restart noticed by any
      ping) is checked first; a dead one is replaced and the whole pool is recycled, so the
      caller never sees it;
    * a connection used within the last ``after_seconds`` is handed out unchecked. If the server
      restarted in that window, the first statement fails: the unit of work raises (memory
      writes answer ``storage_unavailable`` and change nothing), SQLAlchemy recognises the
      disconnect and recycles the pool, and the next unit of work gets a new connection.
    """

    @event.listens_for(engine.pool, "connect")
    def _fresh(dbapi_connection: Any, record: Any) -> None:
        record.info.pop(_IDLE_SINCE, None)  # just connected: nothing to check

    @event.listens_for(engine.pool, "checkin")
    def _idle(dbapi_connection: Any, record: Any) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine.pool, "checkout")
    def _ping(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        since = record.info.get(_IDLE_SINCE)
        if since is None or time.monotonic() - since <= after_seconds:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            # Replace this connection (the pool retries the checkout) and every other one
            # connected before now: a dead connection usually means the server restarted.
            raise InvalidatePoolError(f"idle connection failed its ping: {exc!r}") from exc


def create_engine(url: str, *, pool_size: int = 20) -> AsyncEngine:
    engine = create_async_engine(
        sqlalchemy_url(url),
        # At most ``pool_size`` connections, each kept once opened: no overflow. An overflow
        # connection is closed as it comes back while the pool is full, so a busy process
        # opened and closed connections all the time, each paying a new backend's start on
        # both sides and starting again without prepared statements (docs/performance.md,
        # issue 35's ninth stop). A checkout past the limit waits for a connection to come
        # back.
        pool_size=pool_size,
        max_overflow=0,
        # SQL parameters (memory text, messages) never reach an error message or a log line
        hide_parameters=True,
        # The most recently returned connection first: its backend has this process's prepared
        # statements and catalog caches warm, and the connections a quiet process does not
        # need stay idle (and are pinged when used again).
        pool_use_lifo=True,
        # A statement stuck behind a lock must not hang a request forever. Plans: PostgreSQL's
        # default (psycopg prepares a statement after 5 runs; the server then keeps a generic
        # plan where it is as good as re-planning). The history tools alone need a plan made
        # with their parameters, and ask for it in their own transactions
        # (yuxi.repositories.lookback._params.PLAN_WITH_PARAMETERS).
        connect_args={"options": "-c lock_timeout=15000 -c statement_timeout=60000"},
    )
    ping_idle_connections(engine.sync_engine)
    return engine


def create_session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
