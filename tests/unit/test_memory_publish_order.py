"""``record_while_staging``: when the staging thread starts, and what a record that fails or
succeeds before the loop turns leaves behind (a real workspace on disk, no database)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from yuxi.repositories.memory_version_repository import NewVersion
from yuxi.services._memory_publish import record_while_staging
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace

from .workspaces import OLD_MEMORY, memory_workspace, temp_files


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return memory_workspace(tmp_path, "alice")


@pytest.fixture
async def jobs() -> AsyncIterator[list[str]]:
    """The names of the functions handed to the event loop's thread pool, in order."""
    loop = asyncio.get_running_loop()
    handed: list[str] = []
    original = loop.run_in_executor

    def counting(executor: Any, func: Callable[..., Any], /, *args: Any) -> Any:
        handed.append(getattr(func, "__name__", repr(func)))
        return original(executor, func, *args)

    loop.run_in_executor = counting  # type: ignore[method-assign, assignment]
    yield handed
    del loop.run_in_executor  # the class's method again


def _file(ws: Workspace) -> bytes:
    return ws.read_file_sync(MEMORY_PATH, 1 << 20)


_temps = temp_files


def _version(version_id: str) -> NewVersion:
    return NewVersion(version_id, "u1", "agent", "add", "0" * 64, 0, "0" * 64, "")


async def test_staging_starts_once_the_record_waits_for_the_server(
    ws: Workspace, jobs: list[str]
) -> None:
    # Started while the writer still builds and sends the statement, the thread's Python would
    # contend with the writer's for the GIL: it starts only once the writer awaits the answer.
    seen: list[list[str]] = []

    async def recording() -> NewVersion:
        seen.append(list(jobs))  # building and sending the statement
        await asyncio.sleep(0.01)  # waiting for the server
        seen.append(list(jobs))
        return _version("mv_test")

    version = await record_while_staging(ws, "新的记忆\n".encode(), recording())
    assert version.version_id == "mv_test"
    assert seen == [[], ["_stage_then_wait"]]
    assert _file(ws) == "新的记忆\n".encode() and _temps(ws) == []


async def test_a_record_failing_before_the_loop_turns_stages_nothing(
    ws: Workspace, jobs: list[str]
) -> None:
    async def recording() -> NewVersion:
        raise RuntimeError("refused before anything was sent")

    with pytest.raises(RuntimeError, match="refused"):
        await record_while_staging(ws, b"never\n", recording())
    await asyncio.sleep(0.05)  # a staging job, had one started, would have run by now
    assert jobs == []
    assert _file(ws) == OLD_MEMORY and _temps(ws) == []


async def test_a_record_done_before_the_loop_turns_still_publishes(
    ws: Workspace, jobs: list[str]
) -> None:
    async def recording() -> NewVersion:
        return _version("mv_at_once")

    version = await record_while_staging(ws, "立刻\n".encode(), recording())
    assert version.version_id == "mv_at_once"
    assert jobs == ["_stage_then_wait"]
    assert _file(ws) == "立刻\n".encode() and _temps(ws) == []
