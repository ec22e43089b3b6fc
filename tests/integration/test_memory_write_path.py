"""The memory write path at its floor (issue 14, B1), on real PostgreSQL: what the one-statement
gate and the one-statement version record must still guarantee, and how little they do."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from tests.support.factories import (
    make_run,
    make_user,
    memory_file,
    remember,
    set_memory,
    sha256_of,
)
from tests.support.statements import sent_statements
from tests.support.waiting import until_waiting_on_a_lock
from yuxi import limits
from yuxi.bootstrap import Container


@contextmanager
def _counted(container: Container) -> Iterator[dict[str, Any]]:
    """SQL statements and worker-thread hops (thread-pool jobs) made inside the block."""
    seen: dict[str, Any] = {"statements": [], "hops": 0}

    loop = asyncio.get_running_loop()
    original = loop.run_in_executor

    def counted(executor: Any, func: Any, /, *args: Any) -> Any:
        seen["hops"] += 1
        return original(executor, func, *args)

    loop.run_in_executor = counted  # type: ignore[method-assign, assignment]
    try:
        with sent_statements(container.engine, seen["statements"].append):
            yield seen
    finally:
        del loop.run_in_executor  # the class's method again


async def test_a_steady_state_write_is_two_statements_and_two_hops(
    container: Container,
) -> None:
    """Gate (lock + run + switch + source) and record (gap check + insert + asking message +
    quota + retention); flock + read in one worker thread; in another, the staging of the new
    file (while the record runs), then its rename + directory fsync."""
    uid = await make_user(container)
    run = await make_run(container, uid)
    assert (await remember(container, run, "first"))["status"] == "updated"
    with _counted(container) as seen:
        result = await remember(container, run, "second 第二")
    assert result["status"] == "updated"
    assert result["quota_remaining"]["writes"] == 3  # both writes were counted
    assert len(seen["statements"]) == 2, seen["statements"]
    assert "pg_advisory_xact_lock" in seen["statements"][0]
    assert "FOR UPDATE OF agent_runs" in seen["statements"][0]
    assert seen["statements"][1].startswith("WITH newest AS")
    assert seen["hops"] == 2


async def test_a_gap_is_repaired_then_recorded(container: Container) -> None:
    """The record statement refuses a parent that is not the newest version; the writer then
    records the file as ``recovered`` and the change on top of it, quota counted once."""
    uid = await make_user(container)
    run = await make_run(container, uid)
    assert (await remember(container, run, "first"))["status"] == "updated"
    memory_file(container, uid).write_text("edited outside\n")
    with _counted(container) as seen:
        result = await remember(container, run, "second")
    assert result["status"] == "updated"
    assert result["quota_remaining"]["writes"] == 3
    # gate, record (refused: a gap), newest, insert (returning its id and created_at), record
    assert len(seen["statements"]) == 5, seen["statements"]
    listed = (await container.services.memory_versions.list_versions(uid)).versions
    newest, recovered = listed[0], listed[1]
    assert (recovered.actor, recovered.kind) == ("system", "recovered")
    assert recovered.sha256 == hashlib.sha256(b"edited outside\n").hexdigest()
    assert newest.parent_sha256 == recovered.sha256
    assert newest.sha256 == sha256_of(memory_file(container, uid))


async def test_retention_counts_a_recovered_version_like_any_other(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MEMORY_VERSIONS_KEEP", 2)
    uid = await make_user(container, memory=False)
    memory = container.services.memory
    for n in range(3):
        await memory.write_memory_file(uid, f"state {n}\n".encode())
    memory_file(container, uid).write_text("outside\n")
    await memory.write_memory_file(uid, b"after\n")
    listed = (await container.services.memory_versions.list_versions(uid)).versions
    assert [(v.kind, v.size) for v in listed] == [("edit", 6), ("recovered", 8)]


async def test_a_new_version_over_the_byte_budget_drops_the_recovered_one_too(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MEMORY_VERSIONS_MAX_BYTES", 100)
    uid = await make_user(container, memory=False)
    memory = container.services.memory
    await memory.write_memory_file(uid, b"small\n")
    memory_file(container, uid).write_text("outside\n")
    big = ("记" * 50 + "\n").encode()  # 151 bytes: over the budget alone
    await memory.write_memory_file(uid, big)
    listed = (await container.services.memory_versions.list_versions(uid)).versions
    assert [(v.kind, v.size) for v in listed] == [("edit", 151)]


async def test_a_switch_turned_off_while_the_gate_waits_is_seen(
    container: Container, database_url: str
) -> None:
    """The gate's snapshot is taken before it waits for the advisory lock; the switch is read
    ``FOR SHARE``, so a switch turned off during the wait is still seen: nothing is written."""
    uid = await make_user(container)
    run = await make_run(container, uid)
    path = memory_file(container, uid)
    path.write_text("before\n")
    holder = await psycopg.AsyncConnection.connect(database_url)
    try:
        await holder.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('user-memory:' || %s, 0))", (uid,)
        )
        task = asyncio.ensure_future(remember(container, run, "must not land"))
        await until_waiting_on_a_lock(database_url)
        assert not task.done(), "the write did not wait for the lock"
        await asyncio.wait_for(set_memory(container, uid, False), 10)  # not blocked
        await holder.commit()
        result = await asyncio.wait_for(task, 10)
    finally:
        await holder.close()
    assert result["code"] == "memory_disabled", result
    assert path.read_text() == "before\n"


async def test_turning_the_switch_off_waits_for_a_write_in_flight(
    container: Container, database_url: str
) -> None:
    """The gate holds the switch ``FOR SHARE`` until its write commits: turning memory off
    cannot land between the gate and the publish."""
    from yuxi.repositories.memory.version_repository import MemoryVersionRepository

    uid = await make_user(container)
    run = await make_run(container, uid)
    gate_passed, release = asyncio.Event(), asyncio.Event()
    original = MemoryVersionRepository.record

    async def slow_record(self: MemoryVersionRepository, *args: Any, **kwargs: Any) -> Any:
        gate_passed.set()
        await release.wait()
        return await original(self, *args, **kwargs)

    MemoryVersionRepository.record = slow_record  # type: ignore[method-assign]
    try:
        write = asyncio.ensure_future(remember(container, run, "in flight"))
        await asyncio.wait_for(gate_passed.wait(), 10)
        switch = asyncio.ensure_future(set_memory(container, uid, False))
        await until_waiting_on_a_lock(database_url)
        assert not switch.done(), "turning memory off did not wait for the write"
        release.set()
        assert (await asyncio.wait_for(write, 10))["status"] == "updated"
        await asyncio.wait_for(switch, 10)
    finally:
        MemoryVersionRepository.record = original  # type: ignore[method-assign]
    assert "in flight" in memory_file(container, uid).read_text()
    assert (await remember(container, run, "after"))["code"] == "memory_disabled"
