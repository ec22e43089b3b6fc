"""A run's start on real PostgreSQL: the graph starts (a resume run's checkpoint read, the
middleware, the first model call) while the start is recorded, and a start that finds the lease
gone cancels whatever is in flight (the run is not this worker's any more: nothing of it is
wanted) and records nothing. A chat run reads the checkpoint itself only when the run before it
did not complete (the claim tells)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.pregel import Pregel

from tests.support.factories import make_user, sql
from yuxi.agents.models.offline import OfflineChatModel
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

    async def lost(self: RunService, identity: Any, **kwargs: Any) -> None:
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
    await _lost_with_nothing_recorded(container, worker, uid, run.id, cancelled, "checkpoint read")


async def _lost_with_nothing_recorded(
    container: Container,
    worker: Worker,
    uid: str,
    run_id: str,
    cancelled: asyncio.Event,
    what: str,
) -> None:
    """The worker takes the run, its start finds the lease gone: ``what`` was cancelled, the
    run counts as lost, it is left running (not this worker's to end) with nothing recorded."""
    chat = container.services.chat
    assert await asyncio.wait_for(worker.run_once(), 30)
    assert worker.stats.lost == 1
    assert cancelled.is_set(), f"the {what} outlived the failed start"
    after = await chat.get_run(uid, run_id)
    assert after.status == "running" and after.finished_at is None
    assert [e.event_type for e in await chat.events_after(uid, run_id)] == ["run_status"]


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


async def test_a_chat_run_starts_its_graph_while_its_start_is_recorded(
    container: Container, worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start's statement and the graph's start overlap: here the start is held until the
    graph has read its checkpoint (were they one after the other, this run would never end),
    and still nothing of the graph is recorded before the start — the run's events are in
    order, ``running`` before the first token."""
    graph_started = asyncio.Event()
    read = AsyncPostgresSaver.aget_tuple

    async def noted(self: Any, *args: Any, **kwargs: Any) -> Any:
        graph_started.set()
        return await read(self, *args, **kwargs)

    start = RunService.start

    async def held(self: RunService, identity: Any, **kwargs: Any) -> None:
        await asyncio.wait_for(graph_started.wait(), 20)
        await start(self, identity, **kwargs)

    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "hello qzxoverlap")
    monkeypatch.setattr(AsyncPostgresSaver, "aget_tuple", noted)
    monkeypatch.setattr(RunService, "start", held)
    assert await asyncio.wait_for(worker.run_once(), 30)
    assert (await chat.get_run(uid, run.id)).status == "completed"
    kinds = [(e.event_type, e.data.get("status")) for e in await chat.events_after(uid, run.id)]
    assert kinds[:2] == [("run_status", "pending"), ("run_status", "running")]
    assert ("token", None) in kinds and kinds[-1] == ("run_status", "completed")


async def test_a_start_that_finds_the_lease_gone_stops_the_model_call(
    container: Container, worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chat run's graph is already calling the model when its start finds the lease gone: the
    call is cancelled at once (not when the first step would have been recorded), the worker
    counts the run lost, and nothing of the run is recorded."""
    calling, cancelled = asyncio.Event(), asyncio.Event()

    async def slow_model(self: Any, *args: Any, **kwargs: Any) -> Any:
        calling.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        pytest.fail("the model call was not cancelled")
        yield  # an async generator, as the model's stream is

    async def lost(self: RunService, identity: Any, **kwargs: Any) -> None:
        await asyncio.wait_for(calling.wait(), 20)  # the model is being called
        raise LeaseLost(identity.run_id)

    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "hello qzxlostcall")
    monkeypatch.setattr(OfflineChatModel, "_astream", slow_model)
    monkeypatch.setattr(OfflineChatModel, "_agenerate", _generating(slow_model))
    monkeypatch.setattr(RunService, "start", lost)
    await _lost_with_nothing_recorded(container, worker, uid, run.id, cancelled, "model call")


def _generating(stream: Any) -> Any:
    async def generate(self: Any, *args: Any, **kwargs: Any) -> Any:
        async for _ in stream(self, *args, **kwargs):
            pass

    return generate
