"""Workers: claim pending runs, hold their lease with heartbeats, execute, finish.

Several workers — tasks in the server's pool or separate ``yuxi worker`` processes — share only
PostgreSQL and the data directory. A claim takes the oldest pending run for a fresh
``worker_id``; the heartbeat renews the lease every ``heartbeat_seconds``. When a renewal fails
(the lease expired, was reconciled, or the row changed owner) the worker cancels the run's task
at once and never finishes it: the run's fate is no longer its to decide. A cancel request seen
by the heartbeat cancels the task too, and then the worker records ``cancelled`` as the owner.
A run still going after ``YUXI_RUN_TIMEOUT_SECONDS`` is cancelled the same way and recorded as
failed with ``run_timeout``.

The worker talks to storage only through :class:`~yuxi.services.run_service.RunService`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from yuxi.identity import RunIdentity
from yuxi.runtime.agent_runtime import AgentRuntime
from yuxi.runtime.executor import RunExecutor
from yuxi.services.run_service import ClaimedRun, LeaseLost
from yuxi.services.service_set import Services
from yuxi.vocabulary import RUN_TIMEOUT
from yuxi.workspace.filesystem import Workspace

_log = logging.getLogger(__name__)


@dataclass
class WorkerStats:
    claimed: int = 0
    finished: int = 0
    lost: int = 0
    reconciled: int = 0


class Worker:
    def __init__(
        self,
        services: Services,
        runtime: AgentRuntime,
        workspaces: Callable[[str], Workspace],
        *,
        heartbeat_seconds: float,
        name: str = "worker",
    ) -> None:
        self.heartbeat_seconds = heartbeat_seconds
        self.run_timeout_seconds = runtime.limits.timeout_seconds
        self.runs = services.runs
        self.executor = RunExecutor(services, runtime, workspaces)
        self.name = name
        self.stats = WorkerStats()

    async def reconcile(self) -> list[str]:
        """Fail runs whose worker is gone; the ids of the runs failed."""
        reconciled = await self.runs.reconcile()
        self.stats.reconciled += len(reconciled)
        return [run.run_id for run in reconciled]

    async def claim(self) -> ClaimedRun | None:
        claimed = await self.runs.claim_next()
        if claimed is not None:
            self.stats.claimed += 1
        return claimed

    async def run_once(self) -> bool:
        """Reconcile, claim one run and execute it. False when there was nothing to do."""
        await self.reconcile()
        claimed = await self.claim()
        if claimed is None:
            return False
        await self.execute_claimed(claimed)
        return True

    async def execute_claimed(self, claimed: ClaimedRun) -> None:
        identity = claimed.identity
        task = asyncio.create_task(self.executor.execute(claimed))
        why: list[str] = []
        beat = asyncio.create_task(self._heartbeat(identity, task, why))

        def out_of_time() -> None:
            if not task.done() and not why:
                why.append("timeout")
                task.cancel()

        deadline = asyncio.get_running_loop().call_later(self.run_timeout_seconds, out_of_time)
        try:
            await task
            self.stats.finished += 1
        except LeaseLost:
            self.stats.lost += 1
            _log.warning("%s lost the lease on run %s", self.name, identity.run_id)
        except asyncio.CancelledError:
            if not why:
                raise  # the worker itself is being cancelled
            if why[0] == "cancel":
                with contextlib.suppress(LeaseLost):
                    await self.runs.finish(identity, "cancelled")
                self.stats.finished += 1
            elif why[0] == "timeout":
                with contextlib.suppress(LeaseLost):
                    await self.runs.finish(
                        identity,
                        "failed",
                        error_code=RUN_TIMEOUT,
                        error_message=(
                            f"the run took longer than {self.run_timeout_seconds:g} s and was "
                            "stopped"
                        ),
                    )
                self.stats.finished += 1
            else:
                self.stats.lost += 1
                _log.warning("%s lost the lease on run %s (heartbeat)", self.name, identity.run_id)
        finally:
            deadline.cancel()
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat

    async def _heartbeat(
        self, identity: RunIdentity, task: asyncio.Task[None], why: list[str]
    ) -> None:
        while not task.done():
            await asyncio.sleep(self.heartbeat_seconds)
            try:
                beat = await self.runs.heartbeat(identity)
            except Exception:  # a failed renewal is retried until the lease runs out
                _log.warning("heartbeat for run %s failed", identity.run_id, exc_info=True)
                continue
            if not beat.alive:
                why.append("lost")
                task.cancel()
                return
            if beat.cancel_requested:
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
