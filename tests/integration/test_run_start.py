"""A run's start on real PostgreSQL: a resume run's checkpoint is read while the start is
recorded, and a start that finds the lease gone cancels that read (the run is not this worker's
any more: nothing of it is wanted) and records nothing. A chat run reads the checkpoint itself
only when the run before it did not complete."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.pregel import Pregel

from tests.support.factories import make_user, sql
from yuxi.bootstrap import Container
from yuxi.runtime.worker import Worker
from yuxi.services.runs.service import LeaseLost, RunService


async def test_a_start_that_finds_the_lease_gone_cancels_the_checkpoint_read(
    container: Container, worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    reading, cancelled = asyncio.Event(), asyncio.Event()

    async def slow_read(self: Any, *args: Any, **kwargs: Any) -> Any:
        reading.set()
        try:
            await asyncio.sleep(60)  # still reading when the start fails
        except asyncio.CancelledError:
            cancelled.set()
            raise
        pytest.fail("the checkpoint read was not cancelled")

    async def lost(self: RunService, identity: Any, **kwargs: Any) -> str | None:
        await asyncio.wait_for(reading.wait(), 20)  # the read runs during the start
        raise LeaseLost(identity.run_id)

    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    first, _ = await chat.submit(uid, thread, "hello qzxlost")
    await sql(container, "UPDATE agent_runs SET status = 'interrupted' WHERE id = :id", id=first.id)
    run, _ = await chat.resume(uid, first.id, "approve")
    monkeypatch.setattr(Pregel, "aget_state", slow_read)
    monkeypatch.setattr(RunService, "start", lost)
    assert await asyncio.wait_for(worker.run_once(), 30)
    assert worker.stats.lost == 1
    assert cancelled.is_set(), "the checkpoint read outlived the failed start"
    after = await chat.get_run(uid, run.id)
    assert after.status == "running" and after.finished_at is None  # not this worker's to end
    assert [e.event_type for e in await chat.events_after(uid, run.id)] == ["run_status"]


@pytest.mark.parametrize("before", ["completed", "failed"])
async def test_a_chat_run_reads_the_checkpoint_only_after_a_run_that_did_not_complete(
    container: Container, worker: Worker, monkeypatch: pytest.MonkeyPatch, before: str
) -> None:
    """After a completed run (whose graph answered every call it made) the executor does not
    read the checkpoint: the graph reads it anyway. After one that failed it does, to answer the
    calls that run may have left open."""
    reads: list[str] = []
    read = Pregel.aget_state

    async def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        reads.append("read")
        return await read(self, *args, **kwargs)

    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    first, _ = await chat.submit(uid, thread, "hello qzxfirst")
    await sql(container, "UPDATE agent_runs SET status = :s WHERE id = :id", s=before, id=first.id)
    run, _ = await chat.submit(uid, thread, "again qzxsecond")
    monkeypatch.setattr(Pregel, "aget_state", counted)
    assert await asyncio.wait_for(worker.run_once(), 30)
    assert (await chat.get_run(uid, run.id)).status == "completed"
    assert reads == ([] if before == "completed" else ["read"])
