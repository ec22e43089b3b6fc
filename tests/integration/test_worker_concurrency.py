"""A worker executes up to ``concurrency`` runs at once, each with its own lease; it claims no
more while every slot is taken, nor while its event loop falls behind (the process has no CPU
to spare). The runs here are held by a stand-in executor until the test releases them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from tests.support.factories import make_user
from tests.support.waiting import until
from yuxi.bootstrap import Container, open_agent_runtime
from yuxi.runtime.worker import LAG_LIMIT_SECONDS, LoopLag, Worker
from yuxi.services.runs.service import ClaimedRun


class _Held:
    """Stands in for the executor: each run starts, waits for ``release``, completes."""

    def __init__(self, container: Container) -> None:
        self.container = container
        self.started: list[str] = []
        self.release = asyncio.Event()

    async def execute(self, claimed: ClaimedRun) -> None:
        self.started.append(claimed.identity.run_id)
        await self.release.wait()
        await self.container.services.runs.finish(claimed.identity, "completed", output={})


@pytest.fixture
async def runtime_worker(container: Container) -> AsyncIterator[tuple[Worker, _Held]]:
    async with open_agent_runtime(container) as runtime:
        worker = Worker(
            container.services,
            runtime,
            container.workspace,
            heartbeat_seconds=0.2,
            name="slots",
            concurrency=3,
        )
        held = _Held(container)
        worker.executor.execute = held.execute  # type: ignore[method-assign]
        yield worker, held


async def _submit(container: Container, uid: str, count: int) -> list[str]:
    chat, ids = container.services.chat, []
    for k in range(count):
        thread = await chat.create_thread(uid)
        run, _ = await chat.submit(uid, thread.thread_id, f"slot test {k}")
        ids.append(run.id)
    return ids


async def _statuses(container: Container, uid: str, ids: list[str]) -> list[str]:
    return [(await container.services.chat.get_run(uid, i)).status for i in ids]


async def test_a_worker_runs_up_to_its_concurrency_at_once_each_under_its_own_lease(
    container: Container, runtime_worker: tuple[Worker, _Held]
) -> None:
    worker, held = runtime_worker
    uid = await make_user(container)
    ids = await _submit(container, uid, 4)
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run_forever(stop, poll_seconds=0.05))
    try:
        await until("three runs in flight", lambda: len(held.started) == 3)
        # Full: it keeps looking (polls pass) but claims nothing more.
        polled = worker.stats.polled
        await until("a few safety polls while full", lambda: worker.stats.polled >= polled + 3)
        assert len(held.started) == 3 and worker.stats.claimed == 3
        statuses = await _statuses(container, uid, ids)
        assert sorted(statuses) == ["pending", "running", "running", "running"]
        # Three leases of their own, renewed while they run.
        async with container.session_factory() as s:
            rows = (
                await s.execute(
                    text(
                        "SELECT worker_id FROM agent_runs WHERE id = ANY(:ids)"
                        " AND status = 'running'"
                    ),
                    {"ids": ids},
                )
            ).all()
        assert len({r[0] for r in rows}) == 3
        held.release.set()  # a freed slot takes the fourth at once
        await until("every run completed", lambda: len(held.started) == 4)

        async def all_done() -> bool:
            return set(await _statuses(container, uid, ids)) == {"completed"}

        await until("all four completed", all_done)
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
    assert worker.stats.finished == 4 and worker.stats.lost == 0


async def test_a_worker_whose_loop_falls_behind_claims_no_more_until_it_catches_up(
    container: Container, runtime_worker: tuple[Worker, _Held], monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, held = runtime_worker
    lagging = asyncio.Event()
    lagging.set()

    async def sample() -> None:  # the loop "falls behind" while ``lagging`` is set
        await asyncio.sleep(0.02)
        worker.lag.seconds = LAG_LIMIT_SECONDS * 2 if lagging.is_set() else 0.0

    monkeypatch.setattr(worker.lag, "sample", sample)
    worker.lag.seconds = LAG_LIMIT_SECONDS * 2  # behind from the start
    uid = await make_user(container)
    ids = await _submit(container, uid, 3)
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run_forever(stop, poll_seconds=0.05))
    try:
        await until("the first run in flight", lambda: len(held.started) == 1)
        polled = worker.stats.polled
        await until("a few looks while behind", lambda: worker.stats.polled >= polled + 3)
        # a worker with nothing in flight always takes one run; behind, no second
        assert len(held.started) == 1 and worker.stats.claimed == 1
        assert sorted(await _statuses(container, uid, ids)) == ["pending", "pending", "running"]
        lagging.clear()  # caught up: the free slots fill
        await until("all three in flight", lambda: len(held.started) == 3)
        held.release.set()

        async def all_done() -> bool:
            return set(await _statuses(container, uid, ids)) == {"completed"}

        await until("all three completed", all_done)
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


def test_the_loop_lag_is_smoothed_and_never_negative() -> None:
    lag = LoopLag(weight=0.5)
    lag.observe(-1.0)
    assert lag.seconds == 0.0
    lag.observe(0.4)
    assert lag.seconds == pytest.approx(0.2)
    lag.observe(0.0)
    assert lag.seconds == pytest.approx(0.1)


def test_a_worker_needs_at_least_one_slot(container: Container) -> None:
    with pytest.raises(ValueError):
        Worker(
            container.services,
            object(),  # type: ignore[arg-type]
            container.workspace,
            heartbeat_seconds=1,
            concurrency=0,
        )
