"""A run's start on real PostgreSQL: the thread's checkpoint is read while the start is
recorded, and a start that finds the lease gone cancels that read (the run is not this worker's
any more: nothing of it is wanted) and records nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.pregel import Pregel

from tests.support.factories import make_user
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

    monkeypatch.setattr(Pregel, "aget_state", slow_read)
    monkeypatch.setattr(RunService, "start", lost)
    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "hello qzxlost")
    assert await asyncio.wait_for(worker.run_once(), 30)
    assert worker.stats.lost == 1
    assert cancelled.is_set(), "the checkpoint read outlived the failed start"
    after = await chat.get_run(uid, run.id)
    assert after.status == "running" and after.finished_at is None  # not this worker's to end
    assert [e.event_type for e in await chat.events_after(uid, run.id)] == ["run_status"]
