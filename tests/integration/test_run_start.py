"""A run's start is recorded while its graph runs up to its first output (issue 35: the first
token waits for the longer of the two, not both), on real PostgreSQL with the offline model:
the graph really does run meanwhile; nothing of the run is recorded before its start; a start
that finds the lease gone leaves the run to whoever holds it, with nothing more recorded; a
graph that fails while the start is still being recorded fails the run after the start."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.factories import make_user
from yuxi.agents.models.offline import OfflineChatModel
from yuxi.bootstrap import Container
from yuxi.runtime.worker import Worker
from yuxi.services.runs.service import LeaseLost, RunService


def _model_called(monkeypatch: pytest.MonkeyPatch, *, fails: bool = False) -> asyncio.Event:
    """Set once the graph calls the model (which then fails, with ``fails``)."""
    called = asyncio.Event()
    invoke = OfflineChatModel.ainvoke

    async def noted(self: OfflineChatModel, *args: Any, **kwargs: Any) -> Any:
        called.set()
        if fails:
            raise RuntimeError("qzx model down")
        return await invoke(self, *args, **kwargs)

    monkeypatch.setattr(OfflineChatModel, "ainvoke", noted)
    return called


def _start_after(
    monkeypatch: pytest.MonkeyPatch, called: asyncio.Event, then: Callable[..., Any] | None = None
) -> None:
    """The run's start waits for the model to be called before it records anything (it would
    wait forever if the graph ran only after the start), then does ``then`` instead if given."""
    start = RunService.start

    async def waits(self: RunService, *args: Any, **kwargs: Any) -> str | None:
        await asyncio.wait_for(called.wait(), 20)
        if then is not None:
            return await then(self, *args, **kwargs)  # type: ignore[no-any-return]
        return await start(self, *args, **kwargs)

    monkeypatch.setattr(RunService, "start", waits)


async def _submit(container: Container, text: str) -> tuple[str, str]:
    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, text)
    return uid, run.id


async def test_the_graph_runs_while_the_start_is_recorded_and_nothing_precedes_it(
    container: Container, worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    _start_after(monkeypatch, _model_called(monkeypatch))
    uid, run_id = await _submit(container, "hello qzxstart")
    assert await asyncio.wait_for(worker.run_once(), 60)
    chat = container.services.chat
    assert (await chat.get_run(uid, run_id)).status == "completed"
    events = await chat.events_after(uid, run_id)
    statuses = [e.data.get("status") for e in events if e.event_type == "run_status"]
    assert statuses == ["pending", "running", "completed"]
    running = next(e.seq for e in events if e.data.get("status") == "running")
    # Only the pending event (the submission's) comes before the start's.
    assert [e.event_type for e in events if e.seq < running] == ["run_status"]
    assert any(e.event_type == "token" for e in events)


async def test_a_start_that_finds_the_lease_gone_records_nothing_more(
    container: Container, worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def lost(self: RunService, identity: Any, **kwargs: Any) -> str | None:
        raise LeaseLost(identity.run_id)

    _start_after(monkeypatch, _model_called(monkeypatch), then=lost)
    uid, run_id = await _submit(container, "hello qzxlost")
    assert await asyncio.wait_for(worker.run_once(), 60)
    assert worker.stats.lost == 1
    chat = container.services.chat
    run = await chat.get_run(uid, run_id)
    assert run.status == "running" and run.finished_at is None  # not this worker's to finish
    assert [e.event_type for e in await chat.events_after(uid, run_id)] == ["run_status"]


async def test_a_graph_that_fails_during_the_start_fails_the_run_after_it(
    container: Container, worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    called = _model_called(monkeypatch, fails=True)
    start = RunService.start

    async def late(self: RunService, *args: Any, **kwargs: Any) -> str | None:
        await asyncio.sleep(0.3)  # the graph has failed by now
        return await start(self, *args, **kwargs)

    _start_after(monkeypatch, called, then=late)
    uid, run_id = await _submit(container, "hello qzxfail")
    assert await asyncio.wait_for(worker.run_once(), 60)
    chat = container.services.chat
    assert (await chat.get_run(uid, run_id)).status == "failed"
    statuses = [
        e.data.get("status")
        for e in await chat.events_after(uid, run_id)
        if e.event_type == "run_status"
    ]
    assert statuses == ["pending", "running", "failed"]
