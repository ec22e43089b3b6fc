"""``DriverUnitOfWork`` (an agent's memory write: a transaction on one pooled connection, its
statements sent with psycopg) keeps the unit of work's contract, on real PostgreSQL: commit is
durable, anything else rolls back and releases the advisory lock, and a failed commit is
SQLAlchemy's error with the connection replaced; a failed connect yields to the event loop."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import String, bindparam, func, literal, select, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import create_async_engine

from yuxi.bootstrap import Container
from yuxi.db.driver_statements import DriverStatement
from yuxi.services.unit_of_work import DriverUnitOfWork

from .factories import make_run, make_user

_LOCK = DriverStatement(select(func.pg_advisory_xact_lock(bindparam("key")).label("locked")))
_SET_NAME = DriverStatement(
    text("UPDATE users SET name = :name WHERE uid = :uid RETURNING uid").bindparams(
        bindparam("name", type_=String()), bindparam("uid", type_=String())
    )
)


def _lock_is_free(database_url: str, key: int) -> bool:
    with psycopg.connect(database_url, autocommit=True) as other:
        row = other.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
        if row and row[0]:
            other.execute("SELECT pg_advisory_unlock(%s)", (key,))
            return True
        return False


async def _name_of(container: Container, uid: str) -> str:
    async with container.engine.connect() as conn:
        return str(
            (
                await conn.execute(text("SELECT name FROM users WHERE uid = :uid"), {"uid": uid})
            ).scalar_one()
        )


def _driver(uow: DriverUnitOfWork) -> psycopg.AsyncConnection[object]:
    connection = uow._open().sync_connection
    assert connection is not None
    driver = connection.connection.driver_connection
    assert isinstance(driver, psycopg.AsyncConnection)
    return driver


async def test_commit_is_durable_and_ends_the_transaction(
    container: Container, database_url: str
) -> None:
    uid = await make_user(container)
    key = uuid.uuid4().int % (1 << 62)
    name = "驱动-" + uuid.uuid4().hex[:8]
    async with container.uow.driver() as uow:
        await _LOCK.first(uow._open(), {"key": key})
        await _SET_NAME.first(uow._open(), {"name": name, "uid": uid})
        assert not _lock_is_free(database_url, key)
        await uow.commit()
        assert _driver(uow).info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert _lock_is_free(database_url, key)
    assert await _name_of(container, uid) == name


@pytest.mark.parametrize("how", ["no-commit", "error"])
async def test_leaving_without_commit_rolls_back_and_unlocks(
    container: Container, database_url: str, how: str
) -> None:
    uid = await make_user(container)
    before = await _name_of(container, uid)
    key = uuid.uuid4().int % (1 << 62)
    with pytest.raises(RuntimeError) if how == "error" else contextlib.nullcontext():
        async with container.uow.driver() as uow:
            await _LOCK.first(uow._open(), {"key": key})
            await _SET_NAME.first(uow._open(), {"name": "never", "uid": uid})
            if how == "error":
                raise RuntimeError("the write failed")
    assert _lock_is_free(database_url, key)
    assert await _name_of(container, uid) == before
    # The pooled connection came back clean: the next unit of work works on it.
    async with container.uow.driver() as uow:
        assert (await DriverStatement(select(literal(1).label("v"))).first(uow._open(), {})).v == 1
        assert _driver(uow).info.transaction_status == psycopg.pq.TransactionStatus.INTRANS


async def test_a_commit_on_a_dead_connection_is_sqlalchemys_error(
    container: Container, database_url: str
) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    with pytest.raises(OperationalError) as raised:
        async with container.uow.driver() as uow:
            assert (await uow.lock_memory_write(run)).ok
            pid = _driver(uow).info.backend_pid
            with psycopg.connect(database_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            await asyncio.sleep(0.05)
            await uow.commit()
    assert raised.value.connection_invalidated
    async with container.uow.driver() as uow:
        assert (await uow.lock_memory_write(run)).ok
        assert _driver(uow).info.backend_pid != pid


async def test_a_committed_block_gives_its_connection_back_without_a_task(
    container: Container,
) -> None:
    # After a commit, the pool's reset sends nothing: the block closes its connection inline
    # (no task to schedule and wait for), and the connection is back in the pool at once.
    uid = await make_user(container)
    loop = asyncio.get_running_loop()
    created: list[object] = []
    factory = loop.get_task_factory()

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> Any:
        assert factory is None  # pytest-asyncio's loop: the default Task
        created.append(coro)
        return asyncio.Task(coro, loop=loop, **kwargs)

    pool = container.engine.sync_engine.pool
    async with container.uow.driver() as uow:
        await _SET_NAME.first(uow._open(), {"name": "inline", "uid": uid})
        await uow.commit()
        out_before = pool.checkedout()  # type: ignore[attr-defined]
        loop.set_task_factory(counting)
    loop.set_task_factory(factory)
    assert created == [], "a committed block closed its connection in a task"
    assert pool.checkedout() == out_before - 1  # type: ignore[attr-defined]
    # Left open (no commit), the rollback runs in a shielded task: it must reach the server.
    async with container.uow.driver() as uow:
        await _SET_NAME.first(uow._open(), {"name": "never", "uid": uid})
        loop.set_task_factory(counting)
    loop.set_task_factory(factory)
    assert len(created) == 1
    assert await _name_of(container, uid) == "inline"


async def test_outside_the_block_it_refuses(container: Container) -> None:
    uow = container.uow.driver()
    with pytest.raises(RuntimeError, match="outside"):
        await uow.commit()


async def test_a_failed_connect_yields_to_the_event_loop(tmp_path: Path) -> None:
    # psycopg fails against a missing socket without awaiting anything; a writer retrying in a
    # loop while the server is down (R2b) must still let other tasks run between attempts.
    engine = create_async_engine(f"postgresql+psycopg://nobody@/nowhere?host={tmp_path}")
    ran: list[bool] = []
    try:
        asyncio.get_running_loop().call_soon(ran.append, True)
        with pytest.raises(OperationalError):
            async with DriverUnitOfWork(engine):
                pytest.fail("connected to a server that does not exist")
        assert ran == [True], "the failed connect never yielded to the event loop"
    finally:
        await engine.dispose()
