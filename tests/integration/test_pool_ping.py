"""The pool pings a connection only after it sat idle (``yuxi.db.engine.ping_idle_connections``),
on real PostgreSQL: what it saves, and what a dead connection costs with and without the ping."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from yuxi.db import engine as engine_module
from yuxi.db.engine import (
    PING_AFTER_IDLE_SECONDS,
    ping_idle_connections,
    sqlalchemy_url,
)


@dataclass
class PoolWatch:
    """Every ping the pool makes (still made: this only records it), and every connection
    record checked in (to make them look idle for longer)."""

    pings: list[object] = field(default_factory=list)
    checked_in: list[Any] = field(default_factory=list)

    def age(self, seconds: float) -> None:
        for record in self.checked_in:
            record.info[engine_module._IDLE_SINCE] -= seconds


def _watch(engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch) -> PoolWatch:
    watch = PoolWatch()
    dialect = engine.sync_engine.dialect
    original = dialect.do_ping

    def do_ping(dbapi_connection: Any) -> bool:
        watch.pings.append(dbapi_connection)
        return original(dbapi_connection)

    monkeypatch.setattr(dialect, "do_ping", do_ping)

    @event.listens_for(engine.sync_engine.pool, "checkin")
    def _remember(dbapi_connection: Any, record: Any) -> None:  # after the engine's own
        watch.checked_in.append(record)

    return watch


@pytest.fixture
def watch(engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch) -> PoolWatch:
    return _watch(engine, monkeypatch)


async def _backend_pid(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        pid = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        await conn.commit()
    return int(pid)


async def _terminate(database_url: str, pid: int) -> None:
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as admin:
        await admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        for _ in range(200):  # until the backend is gone
            cur = await admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,))
            if await cur.fetchone() is None:
                return
            await asyncio.sleep(0.01)


async def test_no_ping_for_a_connection_back_moments_ago(
    engine: AsyncEngine, watch: PoolWatch
) -> None:
    first = await _backend_pid(engine)  # a fresh connection: not pinged either
    for _ in range(5):
        assert await _backend_pid(engine) == first
    assert watch.pings == []


async def test_a_connection_idle_past_the_threshold_is_pinged_once(
    engine: AsyncEngine, watch: PoolWatch
) -> None:
    first = await _backend_pid(engine)
    watch.age(PING_AFTER_IDLE_SECONDS + 0.5)
    assert await _backend_pid(engine) == first
    assert len(watch.pings) == 1
    assert await _backend_pid(engine) == first  # just used again: no second ping
    assert len(watch.pings) == 1


async def test_a_dead_idle_connection_is_replaced_unseen(
    engine: AsyncEngine, database_url: str, watch: PoolWatch
) -> None:
    dead = await _backend_pid(engine)
    await _terminate(database_url, dead)
    watch.age(PING_AFTER_IDLE_SECONDS + 0.5)
    # The caller gets a working connection on its first try: no error reaches it.
    replaced = await _backend_pid(engine)
    assert replaced != dead
    assert len(watch.pings) == 1


async def test_a_dead_recent_connection_fails_once_then_the_pool_recovers(
    engine: AsyncEngine, database_url: str, watch: PoolWatch
) -> None:
    """The documented price of not pinging: one unit of work fails (and changes nothing)."""
    dead = await _backend_pid(engine)
    await _terminate(database_url, dead)
    with pytest.raises(DBAPIError) as failed:
        await _backend_pid(engine)
    assert failed.value.connection_invalidated
    assert await _backend_pid(engine) != dead
    assert watch.pings == []


async def test_the_threshold_is_a_parameter(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = create_async_engine(sqlalchemy_url(database_url), pool_size=1)
    ping_idle_connections(plain.sync_engine, after_seconds=0.0)
    watch = _watch(plain, monkeypatch)
    try:
        await _backend_pid(plain)
        await asyncio.sleep(0.01)
        await _backend_pid(plain)
    finally:
        await plain.dispose()
    assert len(watch.pings) == 1
