"""The new MEMORY.md is staged while its version is recorded (``LockedMemory.publish``), on real
PostgreSQL: whatever fails or is cancelled in between, the file keeps its old bytes, no version
or quota is committed, and no temp file is left behind."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from tests.waiting import until
from yuxi.bootstrap import Container
from yuxi.identity import RunIdentity
from yuxi.repositories._memory_version_writes import VersionWrites
from yuxi.services import _memory_publish

from .factories import make_run, make_user, memory_file, remember, sha256_of


def _temps(path: Path) -> list[str]:
    return [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]


async def _state(container: Container, run: RunIdentity) -> tuple[Any, ...]:
    """What a failed write must leave as it was: file hash, versions, the run's quota."""
    path = memory_file(container, run.uid)
    versions = (await container.services.memory_history.list_versions(run.uid)).versions
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


@pytest.fixture(params=["waits", "hands-back"])
def verdict_wait(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The staging thread waits for the record's verdict, or (a slow database) hands the staged
    file back at once and the writer publishes or discards it itself."""
    if request.param == "hands-back":
        monkeypatch.setattr(_memory_publish, "VERDICT_WAIT_SECONDS", 0.0)
    return str(request.param)


async def test_a_write_publishes_either_way(container: Container, verdict_wait: str) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    result = await remember(container, run, "published 已发布")
    assert result["status"] == "updated", result
    path = memory_file(container, uid)
    assert path.read_text() == "published 已发布\n"
    (newest, *_) = (await container.services.memory_history.list_versions(uid)).versions
    assert newest.version_id == result["version_id"] and newest.sha256 == sha256_of(path)
    assert _temps(path) == []


@pytest.mark.parametrize("staged_first", [True, False], ids=["staged-first", "record-first"])
async def test_a_failed_record_discards_the_staged_file(
    container: Container, monkeypatch: pytest.MonkeyPatch, staged_first: bool, verdict_wait: str
) -> None:
    run, path, before = await _kept(container, "kept 保留")

    async def failing_record(self: VersionWrites, *args: Any, **kwargs: Any) -> Any:
        if staged_first:  # the temp is written and fsynced before the record fails
            await until("the staged temp", lambda: _temps(path), within=10, poll=0.005)
        raise OperationalError("record", {}, Exception("connection lost"))

    monkeypatch.setattr(VersionWrites, "record", failing_record)
    result = await remember(container, run, "never published 不发布")
    monkeypatch.undo()
    assert result["code"] == "storage_unavailable", result
    await until("the staged temp to be removed", lambda: not _temps(path), within=10)
    assert await _state(container, run) == before
    assert "never published" not in path.read_text()


async def test_a_failed_staging_commits_no_version(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The version was recorded (not committed) when the temp's fsync failed: it is rolled
    back with the quota count, and the file is untouched."""
    run, path, before = await _kept(container, "kept")
    recorded = asyncio.Event()
    original = VersionWrites.record

    async def record(self: VersionWrites, *args: Any, **kwargs: Any) -> Any:
        version = await original(self, *args, **kwargs)
        recorded.set()
        return version

    def failing_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(VersionWrites, "record", record)
    monkeypatch.setattr(os, "fsync", failing_fsync)
    result = await remember(container, run, "lost to EIO")
    monkeypatch.undo()
    assert recorded.is_set()
    assert result["code"] == "storage_unavailable", result
    assert _temps(path) == []
    assert await _state(container, run) == before


async def test_a_write_cancelled_while_recording_leaves_nothing(
    container: Container, monkeypatch: pytest.MonkeyPatch, verdict_wait: str
) -> None:
    run, path, before = await _kept(container, "kept")
    recording = asyncio.Event()

    async def hanging_record(self: VersionWrites, *args: Any, **kwargs: Any) -> Any:
        recording.set()
        await asyncio.Event().wait()

    monkeypatch.setattr(VersionWrites, "record", hanging_record)
    write = asyncio.ensure_future(remember(container, run, "cancelled 取消"))
    await asyncio.wait_for(recording.wait(), 10)
    await until("the staged temp", lambda: _temps(path), within=10, poll=0.005)
    write.cancel()
    with pytest.raises(asyncio.CancelledError):
        await write
    monkeypatch.undo()
    await until("the staged temp to be removed", lambda: not _temps(path), within=10)
    assert await _state(container, run) == before
    # The locks were released: the next write goes through.
    assert (await remember(container, run, "after"))["status"] == "updated"
