"""Workers: claim pending runs, hold their lease with heartbeats, execute, finish.

Several workers — tasks in the server's pool or separate ``yuxi worker`` processes — share only
PostgreSQL and the data directory. A claim takes the oldest pending run for a fresh
``worker_id``; the heartbeat renews the lease every ``heartbeat_seconds``. When a renewal fails
(the lease expired, was reconciled, or the row changed owner) the worker cancels the run's task
at once and never finishes it: the run's fate is no longer its to decide. A cancel request seen
by the heartbeat cancels the task too, and then the worker records ``cancelled`` as the owner.
A run still going after ``YUXI_RUN_TIMEOUT_SECONDS`` is cancelled the same way and recorded as
failed with ``run_timeout``.

A worker executes up to ``concurrency`` runs at once (``YUXI_WORKER_CONCURRENCY``), each in a
task of its own with its own lease, heartbeat and deadline: a run spends nearly all its time
waiting for the model, so one process serves many at once and a slow model makes nobody queue
behind it while there is a free slot. With every slot taken the worker does not claim; a slot
that frees makes it look at once. Nor does it claim while its event loop falls behind
(:class:`LoopLag` over ``LAG_LIMIT_SECONDS``): the process's CPU is then what limits, and one more
run would only slow every run in flight (and their heartbeats) — the run waits in the queue for
this worker or another process's.

An idle worker does not poll: it sleeps until the process's listener
(:mod:`yuxi.db.notifications`) hears of a new pending run, and only every ``poll_seconds``
(``YUXI_POLL_SECONDS``) looks by itself — the safety net that makes a lost notification a delay,
never a lost run — and reconciles expired leases. A cancel request is heard the same way: the
running run's heartbeat beats at once instead of at its next interval.

The worker talks to storage only through :class:`~yuxi.services.runs.service.RunService`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from yuxi.db.notifications import RUN_CANCEL, RUN_PENDING
from yuxi.identity import RunIdentity
from yuxi.runtime.agent_runtime import AgentRuntime
from yuxi.runtime.executor import RunExecutor
from yuxi.services.runs.service import ClaimedRun, LeaseLost
from yuxi.services.service_set import Services
from yuxi.vocabulary import RUN_TIMEOUT
from yuxi.workspace.filesystem import Workspace

if TYPE_CHECKING:
    from yuxi.db.notifications import Notifications, Subscription

_log = logging.getLogger(__name__)

#: A worker with runs in flight claims no more while its event loop runs timers later than this,
#: on average: the process has no CPU to spare, so the runs wait in the queue for another one.
LAG_LIMIT_SECONDS = 0.1
#: How often the lag is sampled while runs are in flight, and re-checked while it holds claims.
LAG_SAMPLE_SECONDS = 0.1


class LoopLag:
    """How late this event loop runs a timer, smoothed (exponentially, over about a second):
    the process's CPU saturation seen from inside, whatever takes it (runs, streams, requests)."""

    def __init__(self, interval: float = LAG_SAMPLE_SECONDS, weight: float = 0.2) -> None:
        self.interval = interval
        self.weight = weight
        self.seconds = 0.0

    def observe(self, late: float) -> None:
        self.seconds += self.weight * (max(0.0, late) - self.seconds)

    async def sample(self) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.sleep(self.interval)
        self.observe(loop.time() - start - self.interval)


@dataclass
class WorkerStats:
    claimed: int = 0
    #: Claims that found nothing to run (each one statement spent in vain).
    missed: int = 0
    finished: int = 0
    lost: int = 0
    reconciled: int = 0
    #: Idle waits ended by a notification, a listener reconnect or the pool's safety poke.
    woken: int = 0
    #: Idle waits ended by the safety poll's timer.
    polled: int = 0


class Worker:
    def __init__(
        self,
        services: Services,
        runtime: AgentRuntime,
        workspaces: Callable[[str], Workspace],
        *,
        heartbeat_seconds: float,
        name: str = "worker",
        notifications: Notifications | None = None,
        concurrency: int = 1,
    ) -> None:
        if concurrency < 1:
            raise ValueError("a worker executes at least one run at a time")
        self.concurrency = concurrency
        #: The runs this worker is executing now (each a task of :meth:`execute_claimed`).
        self.running: set[asyncio.Task[None]] = set()
        self.lag = LoopLag()
        self._watch: asyncio.Task[None] | None = None
        self.heartbeat_seconds = heartbeat_seconds
        self.notifications = notifications
        self.idle = False
        self._pending: Subscription | None = None
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
        if claimed is None:
            self.stats.missed += 1
        else:
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
        hub = self.notifications
        cancels = None if hub is None else hub.subscribe(RUN_CANCEL, identity.run_id)
        try:
            await self._beat_until_done(identity, task, why, cancels)
        finally:
            if cancels is not None:
                cancels.close()

    async def _beat_until_done(
        self,
        identity: RunIdentity,
        task: asyncio.Task[None],
        why: list[str],
        cancels: Subscription | None,
    ) -> None:
        while not task.done():
            if cancels is None:
                await asyncio.sleep(self.heartbeat_seconds)
            else:  # a cancel request beats at once; the renewal reads it
                await cancels.wait(self.heartbeat_seconds)
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

    async def run_forever(self, stop: asyncio.Event, *, poll_seconds: float | None = 5.0) -> None:
        """Claim and execute runs, up to ``concurrency`` at once, until ``stop`` is set; then
        let the runs in flight finish (cancelled with the worker if it is cancelled). Idle — a
        slot free and nothing pending — it waits for a pending-run notification (or a
        :meth:`poke`); with ``poll_seconds`` it also reconciles and looks for work by itself that
        often (``None``: a pool's :func:`run_pool` does that for it)."""
        hub = self.notifications
        pending = None if hub is None else hub.subscribe(RUN_PENDING)
        self._pending = pending
        freed = asyncio.Event()
        loop = asyncio.get_running_loop()
        next_reconcile = loop.time()
        # Whether a pending run may be waiting: at the start, after a pending-run notification
        # or a poke, after the poll's timer, and after a claim that saw others pending. A claim
        # that finds nothing, or one that saw nobody else pending, clears it, so a slot that
        # frees does not claim in vain: a run costs one claim statement (the notification of
        # a run submitted meanwhile is kept by ``pending`` and sets it again).
        look = True
        try:
            while not stop.is_set():
                try:
                    if poll_seconds is not None and loop.time() >= next_reconcile:
                        next_reconcile = loop.time() + poll_seconds
                        await self.reconcile()
                        look = True
                    if pending is not None and pending.take():
                        look = True
                    if look and self._may_claim():
                        claimed = await self.claim()
                        look = claimed is not None and claimed.more_pending
                        if claimed is not None:
                            if look and hub is not None:  # idle siblings look too
                                hub.wake_channel(RUN_PENDING)
                            self._start(claimed, freed)
                            continue  # and so do we, at once, if others were pending
                except asyncio.CancelledError:
                    raise
                except Exception:
                    look = True  # the claim may not have run: look again at the next wake-up
                    _log.exception("%s: unexpected error; continuing", self.name)
                wait = None if poll_seconds is None else max(0.0, next_reconcile - loop.time())
                if self._lagging():  # look again soon: the lag is re-sampled meanwhile
                    wait = LAG_SAMPLE_SECONDS if wait is None else min(wait, LAG_SAMPLE_SECONDS)
                if await self._idle(stop, pending, freed, wait) or pending is None:
                    look = True  # woken for work, or no listener: every wait ends in a look
            await asyncio.gather(*self.running, return_exceptions=True)
        except asyncio.CancelledError:
            for task in self.running:
                task.cancel()
            await asyncio.gather(*self.running, return_exceptions=True)
            raise
        finally:
            self._pending = None
            if pending is not None:
                pending.close()
            if self._watch is not None:
                self._watch.cancel()

    def _lagging(self) -> bool:
        return bool(self.running) and self.lag.seconds > LAG_LIMIT_SECONDS

    def _may_claim(self) -> bool:
        return len(self.running) < self.concurrency and not self._lagging()

    async def _watch_lag(self) -> None:
        """Sample the loop's lag while runs are in flight (an idle worker wakes for nothing)."""
        while self.running:
            await self.lag.sample()
        self.lag.seconds = 0.0

    def _start(self, claimed: ClaimedRun, freed: asyncio.Event) -> None:
        if self.concurrency > 1 and (self._watch is None or self._watch.done()):
            self._watch = asyncio.create_task(self._watch_lag())
        task = asyncio.create_task(self._execute_logged(claimed))
        self.running.add(task)

        def done(t: asyncio.Task[None]) -> None:
            self.running.discard(t)
            freed.set()

        task.add_done_callback(done)

    async def _execute_logged(self, claimed: ClaimedRun) -> None:
        try:
            await self.execute_claimed(claimed)
        except asyncio.CancelledError:
            raise
        except Exception:  # recording the end failed: the lease runs out and reconcile fails it
            _log.exception("%s: unexpected error in run %s", self.name, claimed.identity.run_id)

    def poke(self) -> bool:
        """Make this worker look for work now if it is idle; False when it is not."""
        if not self.idle or self._pending is None:
            return False
        self._pending.wake()
        return True

    async def _idle(
        self,
        stop: asyncio.Event,
        pending: Subscription | None,
        freed: asyncio.Event,
        seconds: float | None,
    ) -> bool:
        """Until ``stop``, a run of ours ends, ``seconds`` have passed or — with a slot free — a
        pending-run notification. With every slot taken a notification waits in ``pending``
        (it is kept until the next wait or :meth:`Subscription.take`) and the worker is not
        idle: nobody pokes it. True when a notification (or a poke) ended the wait."""
        free = self._may_claim()
        waits: list[asyncio.Future[bool]] = [
            asyncio.ensure_future(stop.wait()),
            asyncio.ensure_future(freed.wait()),
        ]
        if pending is not None and free:
            waits.append(asyncio.ensure_future(pending.wait(None)))
        self.idle = free
        try:
            done, _ = await asyncio.wait(waits, timeout=seconds, return_when="FIRST_COMPLETED")
        finally:
            self.idle = False
            freed.clear()
            for future in waits:
                future.cancel()
            await asyncio.gather(*waits, return_exceptions=True)
        if len(waits) > 2 and waits[2] in done:
            self.stats.woken += 1
            return True
        if not done:  # the poll's timer (``run_forever`` looks then) or the lag's re-check
            self.stats.polled += 1
        return False


async def run_pool(
    workers: list[Worker],
    stop: asyncio.Event,
    *,
    notifications: Notifications | None,
    poll_seconds: float,
) -> None:
    """Run ``workers`` until ``stop``. With a listener, the safety net is the pool's, not each
    worker's: every ``poll_seconds`` one reconcile and one idle worker's look for work — two
    transactions per process however many workers it has; a worker that finds work wakes its
    idle siblings. Without a listener every worker polls by itself."""
    if notifications is None or not workers:
        await asyncio.gather(*(w.run_forever(stop, poll_seconds=poll_seconds) for w in workers))
        return

    async def safety_net() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), poll_seconds)
            if stop.is_set():
                return
            try:
                await workers[0].reconcile()
            except Exception:
                _log.warning("reconcile failed; retrying at the next poll", exc_info=True)
            next(iter(w for w in workers if w.poke()), None)

    await asyncio.gather(*(w.run_forever(stop, poll_seconds=None) for w in workers), safety_net())
