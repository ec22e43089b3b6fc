"""``DriverStatement`` (the write path's two statements on the session's psycopg connection), on
real PostgreSQL: it stays inside the unit of work's transaction, fails like SQLAlchemy, and never
hands a dead or interrupted connection back to the pool."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import psycopg
import pytest
from sqlalchemy import Integer, String, bindparam, event, func, literal, select, text
from sqlalchemy.exc import DataError, DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.pool import QueuePool

from yuxi.db.driver_statements import DriverStatement

_MARKER = "driver-secret-" + uuid.uuid4().hex


@pytest.fixture
def sessions(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


def _checked_out(engine: AsyncEngine) -> int:
    pool = engine.sync_engine.pool
    assert isinstance(pool, QueuePool)
    return pool.checkedout()


async def _backend_pid(session: AsyncSession) -> int:
    return int((await session.execute(text("SELECT pg_backend_pid()"))).scalar_one())


async def test_the_row_matches_core_and_literals_are_bound(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    statement = select(
        (bindparam("n", type_=Integer()) + 1).label("next"),
        bindparam("s", type_=String()).label("echo"),
        literal(True).label("flag"),
        literal("const 常量").label("const"),
    )
    params = {"n": 41, "s": "你好 Ä"}
    async with sessions() as session:
        core = (await session.execute(statement, params)).one()
        row = await DriverStatement(statement).first(session, params)
    assert tuple(row) == tuple(core) == (42, "你好 Ä", True, "const 常量")
    assert (row.next, row.echo, row.flag) == (42, "你好 Ä", True)


async def test_it_runs_in_the_sessions_transaction(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    """It sees what the unit of work did before it, and is rolled back with it."""
    table = "driver_tx_" + uuid.uuid4().hex[:8]
    async with sessions() as session, session.begin():
        await session.execute(text(f"CREATE TABLE {table} (v text)"))
    try:
        returning = f"INSERT INTO {table} (v) VALUES (:v) RETURNING v"  # noqa: S608 (ours)
        insert = DriverStatement(text(returning).bindparams(bindparam("v", type_=String())))
        count = DriverStatement(text(f"SELECT count(*) AS n FROM {table}"))  # noqa: S608
        async with sessions() as session:
            pid = await _backend_pid(session)
            assert (await insert.first(session, {"v": "a"})).v == "a"
            assert (await count.first(session, {})).n == 1
            assert await _backend_pid(session) == pid  # the same connection
            await session.rollback()
        async with sessions() as session:
            assert (await count.first(session, {})).n == 0
            await insert.first(session, {"v": "b"})
            await session.commit()
        async with sessions() as session:
            assert (await count.first(session, {})).n == 1
    finally:
        async with sessions() as session, session.begin():
            await session.execute(text(f"DROP TABLE {table}"))


async def test_a_statement_error_is_sqlalchemys_and_hides_parameters(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    failing = DriverStatement(
        select((bindparam("n", type_=Integer()) / 0).label("x"), bindparam("s", type_=String()))
    )
    async with sessions() as session:
        with pytest.raises(DataError) as raised:
            await failing.first(session, {"n": 1, "s": _MARKER})
        assert isinstance(raised.value.orig, psycopg.errors.DivisionByZero)
        assert not raised.value.connection_invalidated
        assert _MARKER not in str(raised.value)
        await session.rollback()
        # The connection is fine: the same session goes on after the rollback.
        assert (await DriverStatement(select(literal(7).label("v"))).first(session, {})).v == 7


async def test_a_dead_connection_is_invalidated_and_replaced(
    sessions: async_sessionmaker[AsyncSession], engine: AsyncEngine, database_url: str
) -> None:
    probe = DriverStatement(select(literal(1).label("v")))
    async with sessions() as session:
        pid = await _backend_pid(session)
        await session.commit()
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        await asyncio.sleep(0.05)
        with pytest.raises(DBAPIError) as raised:
            await probe.first(session, {})
        assert isinstance(raised.value, OperationalError)
        assert raised.value.connection_invalidated
    async with sessions() as session:
        assert await _backend_pid(session) != pid
        assert (await probe.first(session, {})).v == 1
    assert _checked_out(engine) == 0


async def test_a_cancelled_statement_invalidates_its_connection(
    sessions: async_sessionmaker[AsyncSession], engine: AsyncEngine, database_url: str
) -> None:
    """Cancelled while waiting for a lock: the connection is closed (its backend goes away and
    takes nothing with it), the pool hands out a new one."""
    key = uuid.uuid4().int % (1 << 62)
    wait = DriverStatement(select(func.pg_advisory_xact_lock(literal(key)).label("locked")))
    with psycopg.connect(database_url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (key,))
        pid: int | None = None

        async def waiter() -> None:
            nonlocal pid
            async with sessions() as session:
                pid = await _backend_pid(session)
                await wait.first(session, {})

        task = asyncio.ensure_future(waiter())
        for _ in range(200):
            await asyncio.sleep(0.01)
            waiting = holder.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'",
                (pid,),
            ).fetchone()
            if pid is not None and waiting and waiting[0]:
                break
        else:
            pytest.fail("the statement never waited for the lock")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(200):
            gone = holder.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)
            ).fetchone()
            if gone and gone[0] == 0:
                break
            await asyncio.sleep(0.01)
        else:
            pytest.fail("the cancelled statement's backend is still there")
        holder.execute("SELECT pg_advisory_unlock(%s)", (key,))
    async with sessions() as session:
        assert await _backend_pid(session) != pid
    assert _checked_out(engine) == 0


async def test_cursor_listeners_see_the_statement(
    sessions: async_sessionmaker[AsyncSession], engine: AsyncEngine
) -> None:
    seen: list[tuple[str, str]] = []

    def before(*args: Any) -> None:
        seen.append(("before", args[2]))

    def after(*args: Any) -> None:
        seen.append(("after", args[2]))

    statement = DriverStatement(select(literal(5).label("v")))
    event.listen(engine.sync_engine, "before_cursor_execute", before)
    event.listen(engine.sync_engine, "after_cursor_execute", after)
    try:
        async with sessions() as session:
            await statement.first(session, {})
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", before)
        event.remove(engine.sync_engine, "after_cursor_execute", after)
    assert [kind for kind, _ in seen] == ["before", "after"]
    assert seen[0][1] == seen[1][1] and seen[0][1].startswith("SELECT")


async def test_an_expanding_bind_is_refused_when_compiled(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    statement = DriverStatement(
        select(literal(1)).where(literal(1).in_(bindparam("values", expanding=True)))
    )
    async with sessions() as session:
        with pytest.raises(TypeError, match="expanding"):
            await statement.first(session, {"values": [1]})
