"""Concurrent writers of one user's MEMORY.md never lose an update (real PostgreSQL)."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from tests.integration.proc_writer import start_writer, writer_statuses
from tests.support.factories import make_run, make_user, memory_file, remember
from tests.support.locks import FlockRefusals
from tests.support.waiting import until, until_waiting_on_a_lock
from yuxi.bootstrap import Container
from yuxi.errors import PreconditionFailed


def _entries(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


async def test_eight_concurrent_writers_from_independent_connections(
    container: Container,
) -> None:
    uid = await make_user(container)
    runs = [await make_run(container, uid) for _ in range(8)]
    contents = [f"fact-{i} 事实{i}" for i in range(8)]
    results = await asyncio.gather(
        *(remember(container, run, content) for run, content in zip(runs, contents, strict=True))
    )
    assert [r["status"] for r in results] == ["updated"] * 8
    text = memory_file(container, uid).read_bytes().decode("utf-8")  # strict: valid UTF-8
    for content in contents:
        assert _entries(text).count(content) == 1


async def test_same_content_from_many_runs_is_written_once(container: Container) -> None:
    uid = await make_user(container)
    runs = [await make_run(container, uid) for _ in range(8)]
    results = await asyncio.gather(*(remember(container, r, "only once") for r in runs))
    assert sorted(r["status"] for r in results) == ["unchanged"] * 7 + ["updated"]
    assert _entries(memory_file(container, uid).read_text()) == ["only once"]


async def test_writers_in_separate_os_processes(container: Container) -> None:
    uid = await make_user(container)
    procs = []
    expected: list[str] = []
    for p in range(4):
        contents = [f"proc-{p}-fact-{i}" for i in range(5)]
        expected += contents
        procs.append(await start_writer(container, await make_run(container, uid), contents))
    statuses = await asyncio.gather(*(writer_statuses(p) for p in procs))
    assert statuses == [["updated"] * 5] * 4
    entries = _entries(memory_file(container, uid).read_bytes().decode("utf-8"))
    assert sorted(entries) == sorted(expected)


async def test_concurrent_user_edits_and_tool_writes_lose_nothing(container: Container) -> None:
    """User edits (read → edit → write with If-Match, retry on 412) race with the tool."""
    uid = await make_user(container)
    runs = [await make_run(container, uid) for _ in range(8)]
    service = container.services.memory

    async def user_edit(n: int) -> int:
        conflicts = 0
        while True:
            data, etag = await service.read_memory_file(uid)
            text = data.decode()
            new = (text.rstrip() + "\n\n" if text.strip() else "") + f"user-edit-{n}\n"
            try:
                await service.write_memory_file(uid, new.encode(), if_match=etag)
                return conflicts
            except PreconditionFailed:
                conflicts += 1
                await asyncio.sleep(0)

    tool = [remember(container, r, f"tool-fact-{i}") for i, r in enumerate(runs)]
    edits = [user_edit(n) for n in range(6)]
    results = await asyncio.gather(*tool, *edits)
    assert all(r["status"] == "updated" for r in results[:8])
    entries = _entries(memory_file(container, uid).read_text())
    assert sorted(entries) == sorted(
        [f"tool-fact-{i}" for i in range(8)] + [f"user-edit-{n}" for n in range(6)]
    )


async def test_stale_etag_is_refused_and_file_kept(container: Container) -> None:
    uid = await make_user(container)
    service = container.services.memory
    _, etag = await service.read_memory_file(uid)
    await service.write_memory_file(uid, b"first\n", if_match=etag)
    try:
        await service.write_memory_file(uid, b"stale overwrite\n", if_match=etag)
    except PreconditionFailed:
        pass
    else:
        raise AssertionError("stale ETag was accepted")
    assert memory_file(container, uid).read_text() == "first\n"


async def _blocked_while(holder: Any, writer: Any, blocked: Any) -> None:
    """``writer`` must not finish while ``holder`` holds the lock, and must finish after.
    ``blocked()`` returns once the writer is proven to wait for it (not merely slow)."""
    task = asyncio.ensure_future(writer)
    await blocked()
    assert not task.done(), "the write did not wait for the lock"
    await holder()
    result = await asyncio.wait_for(task, timeout=10)
    if isinstance(result, dict):
        assert result["status"] == "updated", result


async def test_every_writer_takes_the_per_uid_advisory_lock(
    container: Container, database_url: str
) -> None:
    """Another session holding pg_advisory_xact_lock(hashtextextended('user-memory:'||uid, 0))
    blocks remember_memory, user edits and deletes of that uid — and only that uid."""
    uid = await make_user(container)
    other = await make_user(container)
    for make_writer in (
        lambda run: remember(container, run, "waited"),
        lambda run: container.services.memory.write_memory_file(uid, b"user edit\n"),
        lambda run: container.services.memory.delete_memory_file(uid),
    ):
        run = await make_run(container, uid)
        conn = await psycopg.AsyncConnection.connect(database_url)
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('user-memory:' || %s, 0))", (uid,)
        )
        # a different user's write is not blocked
        other_run = await make_run(container, other)
        free = await asyncio.wait_for(remember(container, other_run, "free"), 5)
        assert free["status"] in ("updated", "unchanged")

        async def release(conn: psycopg.AsyncConnection[Any] = conn) -> None:
            await conn.commit()
            await conn.close()

        await _blocked_while(
            release, make_writer(run), lambda: until_waiting_on_a_lock(database_url)
        )


async def test_writes_also_wait_for_the_file_lock(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flock taken inside the advisory lock (see yuxi.workspace.locking) is really taken."""
    import fcntl
    import os

    uid = await make_user(container)
    run = await make_run(container, uid)
    name = container.workspace(uid).directory.name
    path = container.workspace_root / ".locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)

    async def release() -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    refusals = FlockRefusals(monkeypatch)

    async def flock_refused() -> None:
        await until("the writer to find the flock taken", lambda: refusals.count >= 1, within=30)

    await _blocked_while(release, remember(container, run, "after flock"), flock_refused)
