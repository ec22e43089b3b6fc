"""The unit of work keeps its contract on real PostgreSQL, shown with the statements of an agent's
memory write (the gate, the version record): commit is durable and releases the advisory lock;
anything else — leaving without a commit, an error, a cancellation, even in the middle of a
statement — rolls back, releases the lock and gives the connection back (a broken one is
replaced); failures are SQLAlchemy's errors; a failed connect still yields to the event loop."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine
from sqlalchemy.pool import QueuePool

from tests.support.factories import make_run, make_user, memory_file, remember
from tests.support.server import create_user_with_token
from tests.support.waiting import until, until_backend_gone
from yuxi.api.app import create_app
from yuxi.bootstrap import Container
from yuxi.errors import StorageFull
from yuxi.identity import RunIdentity
from yuxi.limits import MEMORY_VERSIONS_KEEP, MEMORY_VERSIONS_MAX_BYTES
from yuxi.repositories.memory.version_repository import EMPTY_SHA256, NewVersion
from yuxi.services.unit_of_work import UnitOfWork, unit_of_work_factory

_KEY = "hashtextextended('user-memory:' || %s, 0)"


def _memory_lock_is_free(database_url: str, uid: str) -> bool:
    with psycopg.connect(database_url, autocommit=True) as other:
        row = other.execute(f"SELECT pg_try_advisory_lock({_KEY})", (uid,)).fetchone()
        if row and row[0]:
            other.execute(f"SELECT pg_advisory_unlock({_KEY})", (uid,))
            return True
        return False


def _checked_out(container: Container) -> int:
    pool = container.engine.sync_engine.pool
    assert isinstance(pool, QueuePool)
    return pool.checkedout()


def _version(uid: str, content: str) -> NewVersion:
    return NewVersion(
        version_id="mv_" + content,
        uid=uid,
        actor="user",
        kind="edit",
        sha256="f" * 64,
        size=len(content),
        parent_sha256=EMPTY_SHA256,
        content=content,
    )


async def _record(uow: UnitOfWork, uid: str, content: str) -> None:
    recorded = await uow.memory_versions.record(
        _version(uid, content), keep=MEMORY_VERSIONS_KEEP, max_bytes=MEMORY_VERSIONS_MAX_BYTES
    )
    assert recorded is not None and recorded.id is not None


async def _versions(container: Container, uid: str) -> list[str]:
    async with container.uow() as uow:
        return [v.version_id for v in await uow.memory_versions.list_newest_first(uid)]


async def _backend_pid(uow: UnitOfWork) -> int:
    return int(
        (await uow.memory_gate.session.execute(text("SELECT pg_backend_pid()"))).scalar_one()
    )


async def _gate(uow: UnitOfWork, run: RunIdentity) -> None:
    assert (await uow.memory_gate.lock(run)).ok


async def test_commit_is_durable_and_releases_the_lock(
    container: Container, database_url: str
) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    async with container.uow() as uow:
        await _gate(uow, run)
        await _record(uow, uid, "kept")
        assert not _memory_lock_is_free(database_url, uid)
        await uow.commit()
        assert _memory_lock_is_free(database_url, uid)
    assert await _versions(container, uid) == ["mv_kept"]


@pytest.mark.parametrize("how", ["no-commit", "error"])
async def test_leaving_without_commit_rolls_back_and_unlocks(
    container: Container, database_url: str, how: str
) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    out = _checked_out(container)
    with pytest.raises(RuntimeError) if how == "error" else contextlib.nullcontext():
        async with container.uow() as uow:
            await _gate(uow, run)
            await _record(uow, uid, "never")
            if how == "error":
                raise RuntimeError("the write failed")
    assert _checked_out(container) == out
    assert _memory_lock_is_free(database_url, uid)
    assert await _versions(container, uid) == []


async def test_a_committed_block_gives_its_connection_back_without_a_task(
    container: Container,
) -> None:
    # After a commit the connection is already back in the pool: the block closes its session
    # inline (no task to schedule and wait for). Left open, it closes in a task of its own.
    uid = await make_user(container)
    run = await make_run(container, uid)
    loop = asyncio.get_running_loop()
    created: list[object] = []
    factory = loop.get_task_factory()

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> Any:
        assert factory is None  # pytest-asyncio's loop: the default Task
        created.append(coro)
        return asyncio.Task(coro, loop=loop, **kwargs)

    out = _checked_out(container)
    async with container.uow() as uow:
        await _gate(uow, run)
        await uow.commit()
        assert _checked_out(container) == out
        loop.set_task_factory(counting)
    loop.set_task_factory(factory)
    assert created == [], "a committed block closed its session in a task"
    async with container.uow() as uow:
        await _gate(uow, run)
        loop.set_task_factory(counting)
    loop.set_task_factory(factory)
    assert len(created) == 1
    assert _checked_out(container) == out


async def test_a_commit_on_a_dead_connection_is_sqlalchemys_error(
    container: Container, database_url: str
) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    with pytest.raises(OperationalError) as raised:
        async with container.uow() as uow:
            await _gate(uow, run)
            pid = await _backend_pid(uow)
            with psycopg.connect(database_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
            await uow.commit()
    assert raised.value.connection_invalidated
    assert _memory_lock_is_free(database_url, uid)
    async with container.uow() as uow:
        await _gate(uow, run)
        assert await _backend_pid(uow) != pid


async def test_a_statement_cancelled_on_the_server_leaves_nothing_behind(
    container: Container, database_url: str
) -> None:
    # The gate waits on the server for the user's memory lock, held elsewhere; the writer is
    # cancelled meanwhile. The statement is cancelled on the server and its connection replaced:
    # nothing stays locked, and no connection is left checked out.
    uid = await make_user(container)
    run = await make_run(container, uid)
    out = _checked_out(container)
    with psycopg.connect(database_url, autocommit=True) as holder:
        holder.execute(f"SELECT pg_advisory_lock({_KEY})", (uid,))
        entered = asyncio.Event()
        pids: list[int] = []

        async def write() -> None:
            async with container.uow() as uow:
                pids.append(await _backend_pid(uow))
                entered.set()
                await _gate(uow, run)
                pytest.fail("the gate passed a lock held elsewhere")

        task = asyncio.ensure_future(write())
        await asyncio.wait_for(entered.wait(), 10)

        def waiting_for_lock() -> bool:
            row = holder.execute(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pids[0],)
            ).fetchone()
            return row is not None and row[0] == "Lock"

        await until("the gate to wait for the lock", waiting_for_lock, within=10, poll=0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)

        await until_backend_gone(holder, pids[0], "the cancelled backend to go")
    assert _checked_out(container) == out
    assert _memory_lock_is_free(database_url, uid)
    async with container.uow() as uow:
        await _gate(uow, run)


async def test_commit_outside_the_block_refuses(container: Container) -> None:
    uow = container.uow()
    with pytest.raises(RuntimeError, match="outside"):
        await uow.commit()


async def test_a_failed_connect_yields_to_the_event_loop(tmp_path: Path) -> None:
    # psycopg fails against a missing socket without awaiting anything; a writer retrying in a
    # loop while the server is down (R2b) must still let other tasks run between attempts.
    engine = create_async_engine(f"postgresql+psycopg://nobody@/nowhere?host={tmp_path}")
    factory = unit_of_work_factory(async_sessionmaker(engine, expire_on_commit=False))
    run = RunIdentity("u", "t", "r", "q", "w")
    ran: list[bool] = []
    try:
        asyncio.get_running_loop().call_soon(ran.append, True)
        with pytest.raises(OperationalError):
            async with factory() as uow:
                await uow.memory_gate.lock(run)
        assert ran == [True], "the failed connect never yielded to the event loop"
    finally:
        await engine.dispose()


_FULL_FUNCTION = """
CREATE OR REPLACE FUNCTION yuxi_test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full';
END $$
"""


async def _fill(container: Container, table: str) -> None:
    """From now on an insert into ``table`` fails as PostgreSQL does on a full disk (53100)."""
    async with container.session_factory() as s, s.begin():
        await s.execute(text(_FULL_FUNCTION))
        await s.execute(
            text(
                f"CREATE TRIGGER yuxi_test_disk_full BEFORE INSERT ON {table}"
                " FOR EACH ROW EXECUTE FUNCTION yuxi_test_disk_full()"
            )
        )


async def _free(container: Container, table: str) -> None:
    async with container.session_factory() as s, s.begin():
        await s.execute(text(f"DROP TRIGGER yuxi_test_disk_full ON {table}"))


async def test_a_full_database_disk_is_storage_full_and_the_block_saves_nothing(
    container: Container,
) -> None:
    """SQLSTATE 53100 (what PostgreSQL raises when a table cannot grow) leaves a unit of work as
    StorageFull — 507 over HTTP, like a full data dir — with the block rolled back; once there
    is room again the same request succeeds, no restart."""
    uid, token = await create_user_with_token(container, "full-disk")
    threads_before = await _threads(container)
    await _fill(container, "conversations")
    with pytest.raises(StorageFull) as caught:
        await container.services.chat.create_thread(uid, title="满")
    assert isinstance(caught.value.__cause__, OperationalError)
    transport = httpx.ASGITransport(app=create_app(container, workers=0))
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://yuxi.test") as client:
        refused = await client.post("/api/v1/threads", json={"title": "满"}, headers=auth)
        assert refused.status_code == 507, refused.text
        assert refused.json()["error"]["code"] == "storage_full"
        assert await _threads(container) == threads_before
        assert (await client.get("/api/v1/threads", headers=auth)).status_code == 200
        await _free(container, "conversations")
        created = await client.post("/api/v1/threads", json={"title": "空"}, headers=auth)
        assert created.status_code == 201, created.text
    assert await _threads(container) == threads_before + 1


async def _threads(container: Container) -> int:
    async with container.session_factory() as s:
        return int(await s.scalar(text("SELECT count(*) FROM conversations")) or 0)


async def test_a_memory_write_on_a_full_database_tells_the_model_storage_full(
    container: Container,
) -> None:
    """The version is recorded before MEMORY.md is replaced: a database that cannot grow
    refuses the write with the file byte for byte as it was, and the model reads the code."""
    uid = await make_user(container, memory=True)
    run = await make_run(container, uid)
    assert (await remember(container, run, "第一条"))["status"] == "updated"
    path = memory_file(container, uid)
    before = path.read_bytes()
    await _fill(container, "memory_versions")
    refused = await remember(container, run, "第二条")
    assert refused["status"] == "error" and refused["code"] == "storage_full", refused
    assert path.read_bytes() == before
    await _free(container, "memory_versions")
    assert (await remember(container, run, "第二条"))["status"] == "updated"
