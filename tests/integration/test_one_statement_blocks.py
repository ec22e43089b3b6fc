"""A one-statement block (``UnitOfWorkFactory.one_statement``) on a real server: its prebuilt
statement rides a connection of the engine's pool, in autocommit, without a session transaction;
the connection goes back as the pool lent it (out of autocommit, nothing open) whether the block
went well, failed, lost its connection or was cancelled mid-statement; an ORM statement in such
a block runs in autocommit too."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import QueuePool

from tests.support.waiting import until, until_backend_gone
from yuxi.db.engine import create_session_factory
from yuxi.db.prebuilt import PrebuiltStatement
from yuxi.services.unit_of_work import UnitOfWorkFactory, unit_of_work_factory

# ``alone``: the statement's transaction began with the statement itself (no ``BEGIN`` sent
# before it in a round trip of its own), which is what autocommit means on the server.
_ALONE = """SELECT pg_backend_pid() AS pid,
    (SELECT xact_start = query_start FROM pg_stat_activity WHERE pid = pg_backend_pid()) AS alone"""
_STATE = PrebuiltStatement(text(_ALONE))
_DIVIDE = PrebuiltStatement(text("SELECT 1 / 0 AS x"))
_SLEEP = PrebuiltStatement(text("SELECT pg_sleep(30) AS slept"))
#: Leaves the connection inside a transaction block: a state the pool must never lend again.
_OPEN = PrebuiltStatement(text("BEGIN"))


def _factory(engine: AsyncEngine) -> UnitOfWorkFactory:
    return unit_of_work_factory(create_session_factory(engine))


def _checked_out(engine: AsyncEngine) -> int:
    pool = engine.sync_engine.pool
    assert isinstance(pool, QueuePool)
    return pool.checkedout()


async def _in_a_transaction(factory: UnitOfWorkFactory) -> tuple[int, bool]:
    """An ordinary block's statement: its backend, and whether it ran inside a transaction
    block (it must: the connection came back out of autocommit)."""
    async with factory() as uow:
        row = await _STATE.one(uow.users.session, {})
    return int(row.pid), not row.alone


async def test_a_prebuilt_statement_runs_alone_and_its_connection_goes_back_as_lent(
    engine: AsyncEngine,
) -> None:
    factory = _factory(engine)
    async with factory.one_statement() as uow:
        row = await _STATE.one(uow.users.session, {})
        assert row.alone, "a one-statement block sent its statement inside a transaction block"
        assert not uow.users.session.in_transaction(), "the session began a transaction"
        assert _checked_out(engine) == 1
    assert _checked_out(engine) == 0
    # The pool hands out its most recent connection first: the same one, out of autocommit.
    assert await _in_a_transaction(factory) == (row.pid, True)


async def test_an_orm_statement_in_a_one_statement_block_runs_alone_too(
    engine: AsyncEngine,
) -> None:
    factory = _factory(engine)
    async with factory.one_statement() as uow:
        alone = (await uow.users.session.execute(text(_ALONE))).one().alone
    assert alone
    assert _checked_out(engine) == 0
    assert (await _in_a_transaction(factory))[1]


async def test_a_failed_statement_gives_the_connection_back_usable(engine: AsyncEngine) -> None:
    factory = _factory(engine)
    async with factory.one_statement() as uow:
        pid = (await _STATE.one(uow.users.session, {})).pid
    with pytest.raises(DBAPIError) as raised:
        async with factory.one_statement() as uow:
            await _DIVIDE.one(uow.users.session, {})
    assert isinstance(raised.value.orig, psycopg.errors.DivisionByZero)
    assert not raised.value.connection_invalidated
    assert _checked_out(engine) == 0
    assert await _in_a_transaction(factory) == (pid, True)


async def test_a_lost_connection_is_replaced(engine: AsyncEngine, database_url: str) -> None:
    factory = _factory(engine)
    with pytest.raises(OperationalError) as raised:
        async with factory.one_statement() as uow:
            pid = (await _STATE.one(uow.users.session, {})).pid
            with psycopg.connect(database_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
            await _STATE.one(uow.users.session, {})
    assert raised.value.connection_invalidated
    assert _checked_out(engine) == 0
    new_pid, in_transaction = await _in_a_transaction(factory)
    assert new_pid != pid and in_transaction


async def test_a_block_that_lost_its_connection_takes_another_for_its_next_statement(
    engine: AsyncEngine, database_url: str
) -> None:
    """A block that caught the error of its lost connection and sends again: the lost one is
    given back (invalidated) before a fresh one is taken from the pool."""
    factory = _factory(engine)
    async with factory.one_statement() as uow:
        pid = (await _STATE.one(uow.users.session, {})).pid
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
        with pytest.raises(OperationalError):
            await _STATE.one(uow.users.session, {})
        again = await _STATE.one(uow.users.session, {})
        assert again.pid != pid and again.alone
        assert _checked_out(engine) == 1
    assert _checked_out(engine) == 0


async def test_a_connection_left_in_a_transaction_is_never_lent_again(
    engine: AsyncEngine, database_url: str
) -> None:
    """A connection whose state is not the one it was lent in (here: inside a transaction
    block) is invalidated as the block gives it back: its backend goes, and the next block gets
    another, outside any transaction."""
    factory = _factory(engine)
    async with factory.one_statement() as uow:
        pid = (await _STATE.one(uow.users.session, {})).pid
    async with factory.one_statement() as uow:
        await _OPEN.execute(uow.users.session, {})
        assert (await _STATE.one(uow.users.session, {})).pid == pid
    assert _checked_out(engine) == 0
    with psycopg.connect(database_url, autocommit=True) as watcher:
        await until_backend_gone(watcher, pid, "the connection left in a transaction to go")
    new_pid, in_transaction = await _in_a_transaction(factory)
    assert new_pid != pid and in_transaction
    async with factory.one_statement() as uow:
        assert (await _STATE.one(uow.users.session, {})).alone


async def test_a_statement_cancelled_mid_way_leaves_nothing_behind(
    engine: AsyncEngine, database_url: str
) -> None:
    factory = _factory(engine)
    async with factory.one_statement() as uow:
        pid = (await _STATE.one(uow.users.session, {})).pid

    async def sleep() -> None:
        async with factory.one_statement() as uow:
            await _SLEEP.one(uow.users.session, {})
        pytest.fail("the statement was not interrupted")

    with psycopg.connect(database_url, autocommit=True) as watcher:

        def sleeping() -> bool:
            row = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND query LIKE %s",
                (pid, "%pg_sleep%"),
            ).fetchone()
            return row is not None and row[0] == 1

        task = asyncio.ensure_future(sleep())
        await until("the statement to run", sleeping, within=10, poll=0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)

        await until_backend_gone(watcher, pid, "the interrupted backend to go")
    assert _checked_out(engine) == 0
    new_pid, in_transaction = await _in_a_transaction(factory)
    assert new_pid != pid and in_transaction
