"""Publishing a new MEMORY.md (``LockedMemory.publish``) on real PostgreSQL: the version is
recorded first, the file replaced only once the record is in, and the block commits last.
Whatever fails or is cancelled before the replacement, the file keeps its old bytes, no version
or quota is committed and no temp file is left behind; a writer cancelled during the replacement
lets go of the locks only once the file is replaced (the next write then records it)."""

from __future__ import annotations

import asyncio
import fcntl
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import QueuePool

from tests.support.factories import make_run, make_user, memory_file, remember, sha256_of
from tests.support.waiting import until
from yuxi.bootstrap import Container
from yuxi.identity import RunIdentity
from yuxi.repositories.memory.version_repository import MemoryVersionRepository
from yuxi.workspace.filesystem import Workspace


def _temps(path: Path) -> list[str]:
    return [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]


async def _state(container: Container, run: RunIdentity) -> tuple[Any, ...]:
    """What a failed write must leave as it was: file hash, versions, the run's quota."""
    path = memory_file(container, run.uid)
    versions = (await container.services.memory_versions.list_versions(run.uid)).versions
    async with container.session_factory() as session:
        quota = (
            await session.execute(
                text("SELECT memory_writes, memory_write_bytes FROM agent_runs WHERE id = :id"),
                {"id": run.run_id},
            )
        ).one()
    return sha256_of(path), [v.version_id for v in versions], tuple(quota)


async def _kept(container: Container, content: str) -> tuple[RunIdentity, Path, tuple[Any, ...]]:
    """A user whose run has written ``content``: the run, MEMORY.md, and its :func:`_state`."""
    uid = await make_user(container)
    run = await make_run(container, uid)
    assert (await remember(container, run, content))["status"] == "updated"
    return run, memory_file(container, uid), await _state(container, run)


def _checked_out(container: Container) -> int:
    pool = container.engine.sync_engine.pool
    assert isinstance(pool, QueuePool)
    return pool.checkedout()


async def test_a_write_publishes_its_recorded_version(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    result = await remember(container, run, "published 已发布")
    assert result["status"] == "updated", result
    path = memory_file(container, uid)
    assert path.read_text() == "published 已发布\n"
    (newest, *_) = (await container.services.memory_versions.list_versions(uid)).versions
    assert newest.version_id == result["version_id"] and newest.sha256 == sha256_of(path)
    assert _temps(path) == []


async def test_a_failed_record_replaces_nothing(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, path, before = await _kept(container, "kept 保留")
    replaced: list[bytes] = []
    real_replace = Workspace.replace_file_sync

    def replace(self: Workspace, name: str, data: bytes) -> None:
        replaced.append(data)
        real_replace(self, name, data)

    async def failing_record(self: MemoryVersionRepository, *args: Any, **kwargs: Any) -> Any:
        raise OperationalError("record", {}, Exception("connection lost"))

    monkeypatch.setattr(Workspace, "replace_file_sync", replace)
    monkeypatch.setattr(MemoryVersionRepository, "record", failing_record)
    result = await remember(container, run, "never published 不发布")
    monkeypatch.undo()
    assert result["code"] == "storage_unavailable", result
    assert replaced == []
    assert _temps(path) == []
    assert await _state(container, run) == before


async def test_a_failed_replacement_commits_no_version(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The version was recorded (not committed) when the temp's fsync failed: it is rolled
    back with the quota count, and the file is untouched."""
    run, path, before = await _kept(container, "kept")
    recorded = asyncio.Event()
    original = MemoryVersionRepository.record

    async def record(self: MemoryVersionRepository, *args: Any, **kwargs: Any) -> Any:
        version = await original(self, *args, **kwargs)
        recorded.set()
        return version

    def failing_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(MemoryVersionRepository, "record", record)
    monkeypatch.setattr(os, "fsync", failing_fsync)
    result = await remember(container, run, "lost to EIO")
    monkeypatch.undo()
    assert recorded.is_set()
    assert result["code"] == "storage_unavailable", result
    assert _temps(path) == []
    assert await _state(container, run) == before


async def test_a_write_cancelled_while_recording_leaves_nothing(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled while the record statement runs on the server: the statement is cancelled, the
    connection goes back (replaced), the file and the history are as they were."""
    run, path, before = await _kept(container, "kept")
    out = _checked_out(container)
    pids: list[int] = []
    original = MemoryVersionRepository.record

    async def slow_record(self: MemoryVersionRepository, *args: Any, **kwargs: Any) -> Any:
        pids.append((await self.session.execute(text("SELECT pg_backend_pid()"))).scalar_one())
        await self.session.execute(text("SELECT pg_sleep(60)"))
        return await original(self, *args, **kwargs)

    async def sleeping() -> bool:
        if not pids:
            return False
        async with container.engine.connect() as conn:
            event = await conn.execute(
                text("SELECT wait_event FROM pg_stat_activity WHERE pid = :pid"), {"pid": pids[0]}
            )
            return event.scalar_one_or_none() == "PgSleep"

    monkeypatch.setattr(MemoryVersionRepository, "record", slow_record)
    write = asyncio.ensure_future(remember(container, run, "cancelled 取消"))
    await until("the record to run on the server", sleeping, within=10, poll=0.01)
    write.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(write, 10)
    monkeypatch.undo()
    assert _checked_out(container) == out
    assert _temps(path) == []
    assert await _state(container, run) == before
    # The locks were released: the next write goes through.
    assert (await asyncio.wait_for(remember(container, run, "after"), 10))["status"] == "updated"


async def test_a_writer_cancelled_during_the_replacement_waits_for_it(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replacement thread is running when the writer is cancelled: the writer lets go of
    the workspace lock only once the file is replaced (never while a rename may still land).
    Its transaction rolls back, so the next write records the file as ``recovered`` first."""
    run, path, _ = await _kept(container, "kept")
    entered, go = threading.Event(), threading.Event()
    order: list[str] = []
    real_replace = Workspace.replace_file_sync
    real_flock = fcntl.flock

    def blocked_replace(self: Workspace, name: str, data: bytes) -> None:
        entered.set()
        assert go.wait(30), "never let go"
        real_replace(self, name, data)
        order.append("replaced")

    def flock(fd: int, operation: int) -> None:
        if operation == fcntl.LOCK_UN:
            order.append("unlocked")
        real_flock(fd, operation)

    monkeypatch.setattr(Workspace, "replace_file_sync", blocked_replace)
    monkeypatch.setattr(fcntl, "flock", flock)
    write = asyncio.ensure_future(remember(container, run, "cancelled mid-replace"))
    await asyncio.wait_for(asyncio.to_thread(entered.wait, 10), 15)
    write.cancel()
    # Runs after the writer's wake-up with the cancellation (scheduled by cancel() above): a
    # writer that did not wait for the thread would have unlocked by then.
    asyncio.get_running_loop().call_soon(go.set)
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(write, 10)
    monkeypatch.undo()
    assert order == ["replaced", "unlocked"]
    assert path.read_text() == "kept\n\ncancelled mid-replace\n"
    assert _temps(path) == []
    after = await remember(container, run, "after")
    assert after["status"] == "updated", after
    newest, recovered, *_ = (
        await container.services.memory_versions.list_versions(run.uid)
    ).versions
    assert newest.version_id == after["version_id"]
    assert (recovered.actor, recovered.kind) == ("system", "recovered")


@pytest.mark.parametrize(("code", "expected"), [(28, "storage_full"), (30, "storage_read_only")])
async def test_a_full_or_read_only_disk_commits_no_version(
    container: Container, monkeypatch: pytest.MonkeyPatch, code: int, expected: str
) -> None:
    """ENOSPC (28) on the temp's bytes, EROFS (30) on its creation: the version recorded before
    the replacement rolls back with the quota count; the model is told the clear code."""
    run, path, before = await _kept(container, "kept 保留")
    recorded = asyncio.Event()
    original = MemoryVersionRepository.record
    real_write, real_open = os.write, os.open

    async def record(self: MemoryVersionRepository, *args: Any, **kwargs: Any) -> Any:
        version = await original(self, *args, **kwargs)
        recorded.set()
        return version

    def write(fd: int, data: Any) -> int:
        if code == 28 and os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
            raise OSError(code, os.strerror(code))
        return real_write(fd, data)

    def open_(name: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if code == 30 and str(name).endswith(".tmp"):
            raise OSError(code, os.strerror(code))
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(MemoryVersionRepository, "record", record)
    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(os, "open", open_)
    result = await remember(container, run, "写不下 no room")
    monkeypatch.undo()
    assert recorded.is_set()
    assert result["code"] == expected, result
    assert _temps(path) == []
    assert await _state(container, run) == before
    assert (await remember(container, run, "写得下 room again"))["status"] == "updated"
