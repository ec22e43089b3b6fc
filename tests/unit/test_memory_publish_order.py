"""``LockedMemory.publish``: the version is recorded before the file is replaced, a failed
record replaces nothing, and the replacement (``replace_memory_file``) is never abandoned by a
cancelled writer (a real workspace on disk, the database faked)."""

from __future__ import annotations

import asyncio
import errno
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.unit.workspaces import OLD_MEMORY, memory_workspace, temp_files
from yuxi.errors import StorageFull
from yuxi.repositories.memory.version_repository import NewVersion
from yuxi.services.memory import CurrentFile, LockedMemory, replace_memory_file
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return memory_workspace(tmp_path, "alice")


def _file(ws: Workspace) -> bytes:
    return ws.read_file_sync(MEMORY_PATH, 1 << 20)


class _Versions:
    """The one repository call ``publish`` makes, noting what the file held when it ran."""

    def __init__(self, ws: Workspace, error: BaseException | None = None) -> None:
        self.ws, self.error, self.file_when_recorded = ws, error, b""

    async def record(self, version: NewVersion, **_: Any) -> NewVersion:
        self.file_when_recorded = _file(self.ws)
        if self.error is not None:
            raise self.error
        version.id = 1
        return version


def _locked(ws: Workspace, versions: _Versions) -> LockedMemory:
    uow: Any = SimpleNamespace(memory_versions=versions)
    return LockedMemory(uow, ws, "alice", CurrentFile(OLD_MEMORY))


async def test_the_version_is_recorded_before_the_file_changes(ws: Workspace) -> None:
    versions = _Versions(ws)
    locked = _locked(ws, versions)
    version = await locked.publish("新的记忆\n".encode(), actor="user", kind="edit")
    assert versions.file_when_recorded == OLD_MEMORY
    assert _file(ws) == "新的记忆\n".encode() and temp_files(ws) == []
    assert locked.published == [version]


async def test_a_failed_record_replaces_nothing(ws: Workspace) -> None:
    locked = _locked(ws, _Versions(ws, RuntimeError("the record failed")))
    with pytest.raises(RuntimeError, match="record failed"):
        await locked.publish(b"never\n", actor="user", kind="edit")
    assert _file(ws) == OLD_MEMORY and temp_files(ws) == []
    assert locked.published == []


async def test_none_deletes_the_file_even_when_it_is_missing(ws: Workspace) -> None:
    await replace_memory_file(ws, None)
    assert not (ws.directory / MEMORY_PATH).exists()
    await replace_memory_file(ws, None)


async def test_a_failed_replacement_leaves_the_old_file(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr("os.fsync", failing_fsync)
    with pytest.raises(OSError, match="Input/output"):
        await replace_memory_file(ws, b"lost\n")
    monkeypatch.undo()
    assert _file(ws) == OLD_MEMORY and temp_files(ws) == []


async def test_a_cancelled_writer_returns_only_once_the_file_is_replaced(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered, go = threading.Event(), threading.Event()
    order: list[str] = []
    real_replace = Workspace.replace_file_sync

    def blocked_replace(self: Workspace, name: str, data: bytes) -> None:
        entered.set()
        assert go.wait(30), "never let go"
        real_replace(self, name, data)
        order.append("replaced")

    async def writer() -> None:
        try:
            await replace_memory_file(ws, "替换\n".encode())
        finally:
            order.append("writer left")

    monkeypatch.setattr(Workspace, "replace_file_sync", blocked_replace)
    task = asyncio.ensure_future(writer())
    await asyncio.wait_for(asyncio.to_thread(entered.wait, 10), 15)
    task.cancel()
    # Runs after the writer's wake-up with the cancellation: a writer that did not wait for
    # the thread would have left by then.
    asyncio.get_running_loop().call_soon(go.set)
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    assert order == ["replaced", "writer left"]
    assert _file(ws) == "替换\n".encode() and temp_files(ws) == []


async def test_a_replacement_on_a_full_disk_marks_the_block_failed(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The version is in the block's transaction but its bytes are not on disk: the block is
    marked failed, so it never commits (even if its caller caught the error and went on)."""

    def full(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    locked = _locked(ws, _Versions(ws))
    monkeypatch.setattr("os.write", full)
    with pytest.raises(StorageFull):
        await locked.publish("写不下\n".encode(), actor="user", kind="edit")
    monkeypatch.undo()
    assert locked.failed and locked.published == []
    assert _file(ws) == OLD_MEMORY and temp_files(ws) == []
