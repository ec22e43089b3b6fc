"""Workers: claim pending runs, hold their lease with heartbeats, execute, finish.

Several workers — tasks in the server's pool or separate ``yuxi worker`` processes — share only
PostgreSQL and the data directory. A claim takes the oldest pending run with
``FOR UPDATE SKIP LOCKED`` and a fresh ``worker_id``; the heartbeat renews the lease every
``heartbeat_seconds``. When a renewal fails (the lease expired, was reconciled, or the row
changed owner) the worker cancels the run's task at once and never finishes it: the run's fate
is no longer its to decide. A cancel request seen by the heartbeat cancels the task too, and then
the worker records ``cancelled`` as the owner.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sqlalchemy import select

from yuxi.bootstrap import Container
from yuxi.db.models import AgentRun
from yuxi.repositories.agent_run_repository import AgentRunRepository
from yuxi.repositories.run_event_repository import RunEventRepository
from yuxi.runtime.checkpointer import open_checkpointer
from yuxi.runtime.executor import RunDeps, RunExecutor
from yuxi.runtime.persistence import LeaseLost, RunRecorder

_log = logging.getLogger(__name__)


@dataclass
class WorkerStats:
    claimed: int = 0
    finished: int = 0
    lost: int = 0
    reconciled: int = 0


class Worker:
    def __init__(self, container: Container, deps: RunDeps, *, name: str = "worker") -> None:
        self.container = container
        self.settings = container.settings
        self.deps = deps
        self.executor = RunExecutor(deps)
        self.name = name
        self.stats = WorkerStats()

    async def reconcile(self) -> list[str]:
        async with self.deps.sessions() as session, session.begin():
            ids = await AgentRunRepository(session).reconcile_expired()
            for run_id in ids:
                await RunEventRepository(session).append(
                    run_id,
                    "run_status",
                    {"status": "failed", "error": {"code": "worker_lease_expired"}},
                )
        self.stats.reconciled += len(ids)
        return ids

    async def claim(self) -> AgentRun | None:
        async with self.deps.sessions() as session, session.begin():
            run = await AgentRunRepository(session).claim_next(
                lease_seconds=self.settings.lease_seconds
            )
        if run is not None:
            self.stats.claimed += 1
        return run

    async def run_once(self) -> bool:
        """Reconcile, claim one run and execute it. False when there was nothing to do."""
        await self.reconcile()
        run = await self.claim()
        if run is None:
            return False
        await self.execute_claimed(run)
        return True

    async def execute_claimed(self, run: AgentRun) -> None:
        assert run.worker_id is not None
        recorder = RunRecorder(self.deps.sessions, run, run.worker_id)
        task = asyncio.create_task(self.executor.execute(run, recorder))
        why: list[str] = []
        beat = asyncio.create_task(self._heartbeat(run, task, why))
        try:
            await task
            self.stats.finished += 1
        except LeaseLost:
            self.stats.lost += 1
            _log.warning("%s lost the lease on run %s", self.name, run.id)
        except asyncio.CancelledError:
            if not why:
                raise  # the worker itself is being cancelled
            if why[0] == "cancel":
                with contextlib.suppress(LeaseLost):
                    await recorder.finish("cancelled")
                self.stats.finished += 1
            else:
                self.stats.lost += 1
                _log.warning("%s lost the lease on run %s (heartbeat)", self.name, run.id)
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat

    async def _heartbeat(self, run: AgentRun, task: asyncio.Task[None], why: list[str]) -> None:
        assert run.worker_id is not None
        while not task.done():
            await asyncio.sleep(self.settings.heartbeat_seconds)
            try:
                async with self.deps.sessions() as session, session.begin():
                    repo = AgentRunRepository(session)
                    alive = await repo.renew_lease(
                        run.id, run.worker_id, lease_seconds=self.settings.lease_seconds
                    )
                    cancel = (
                        await session.execute(
                            select(AgentRun.cancel_requested).where(AgentRun.id == run.id)
                        )
                    ).scalar_one_or_none()
            except Exception:  # a failed renewal is retried until the lease runs out
                _log.warning("heartbeat for run %s failed", run.id, exc_info=True)
                continue
            if not alive:
                why.append("lost")
                task.cancel()
                return
            if cancel:
                why.append("cancel")
                task.cancel()
                return

    async def run_forever(self, stop: asyncio.Event, *, poll_seconds: float = 0.2) -> None:
        while not stop.is_set():
            try:
                worked = await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.exception("%s: unexpected error; continuing", self.name)
                worked = False
            if not worked:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=poll_seconds)


@asynccontextmanager
async def open_run_deps(container: Container) -> AsyncIterator[RunDeps]:
    from yuxi.agents.models.factory import build_chat_model

    async with open_checkpointer(container.database_url) as checkpointer:
        yield RunDeps(
            sessions=container.session_factory,
            memory=container.services.memory,
            lookback=container.services.lookback,
            model=build_chat_model(container.settings),
            checkpointer=checkpointer,
            workspace_for=container.workspace,
        )


async def run_workers(container: Container, count: int, stop: asyncio.Event) -> None:
    """A pool of ``count`` workers in this process until ``stop`` is set."""
    async with open_run_deps(container) as deps:
        workers = [Worker(container, deps, name=f"worker-{i}") for i in range(count)]
        await asyncio.gather(*(w.run_forever(stop) for w in workers))
