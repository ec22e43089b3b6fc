"""R3 worker crash: a ``yuxi worker`` process dies (or freezes) in the middle of a run.

The run is held mid-tool deterministically: the test takes the user's memory advisory lock, so
the worker's ``remember_memory`` call blocks inside its transaction while the worker keeps
heartbeating. Then the worker is

* ``sigkill`` — killed outright, or
* ``sigstop`` — frozen (heartbeats stop, the process keeps its state), and woken up again after
  another worker has reconciled its run: a zombie that tries to finish what it started.

Either way the lease (3 s) runs out, a second worker process (two workers) and an in-process
reconciler race to reconcile the run: it is failed exactly once with ``worker_lease_expired``,
never claimed again (one ``running`` event, attempt 1), the dead worker's identity is refused by
``remember_memory`` (``unauthorized_run``) and by the lease-fenced recorder, and runs queued
behind it are executed exactly once by the survivor.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import select

from tests.reliability.support import ROOT, TIMEOUT, report, scale
from tests.support.factories import make_user, memory_file, remember
from tests.support.waiting import until
from yuxi.bootstrap import Container, build_worker, open_agent_runtime
from yuxi.db.models import AgentRun, RunEvent
from yuxi.identity import RunIdentity
from yuxi.repositories.runs.agent_run_repository import AgentRunRepository
from yuxi.services.runs.service import LeaseLost

pytestmark = [pytest.mark.pg, pytest.mark.slow, TIMEOUT]

LEASE_SECONDS = 3
HEARTBEAT_SECONDS = 1
QUEUED = 4
LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended('user-memory:' || %s, 0))"
WAITERS_SQL = (
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)


@dataclass
class WorkerProcess:
    proc: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")


def _start_worker(container: Container, log: Path, count: int) -> WorkerProcess:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("YUXI_")},
        "YUXI_DATABASE_URL": container.database_url,
        "YUXI_DATA_DIR": str(container.settings.data_dir),
        "YUXI_LEASE_SECONDS": str(LEASE_SECONDS),
        "YUXI_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS),
        # One run per worker: the first worker's only run is the victim's, so the queued runs
        # wait for the survivor (a worker with free slots would claim them too and die with them).
        "YUXI_WORKER_CONCURRENCY": "1",
    }
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "yuxi.cli", "worker", "--count", str(count)],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return WorkerProcess(proc, log)


async def _ready(worker: WorkerProcess) -> None:
    def up() -> bool:
        if worker.proc.poll() is not None:
            pytest.fail(f"worker exited early:\n{worker.text()[-3000:]}")
        return "worker(s) running" in worker.text()

    await until("the worker process to start", up)


def _stop(worker: WorkerProcess) -> None:
    if worker.proc.poll() is None:
        worker.proc.send_signal(signal.SIGCONT)
        worker.proc.terminate()
        try:
            worker.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.proc.kill()
            worker.proc.wait()


async def _run(container: Container, run_id: str) -> AgentRun:
    async with container.session_factory() as s:
        run = await AgentRunRepository(s).get(run_id)
    assert run is not None
    return run


async def _events(container: Container, run_id: str) -> list[RunEvent]:
    async with container.session_factory() as s:
        rows = await s.execute(
            select(RunEvent).where(RunEvent.run_id == run_id).order_by(RunEvent.seq)
        )
        return list(rows.scalars())


def _status_events(events: list[RunEvent]) -> Counter[str]:
    return Counter(str(e.data.get("status")) for e in events if e.event_type == "run_status")


async def _crash_round(
    container: Container, tmp: Path, variant: str, round_no: int, stats: defaultdict[str, float]
) -> None:
    chat = container.services.chat
    victim = await make_user(container, name=f"r3-victim-{round_no}")
    other = await make_user(container, name=f"r3-queued-{round_no}")
    first = _start_worker(container, tmp / f"w1-{variant}-{round_no}.log", count=1)
    second: WorkerProcess | None = None
    lock = await psycopg.AsyncConnection.connect(container.database_url)
    try:
        await _ready(first)
        await lock.execute(LOCK_SQL, (victim,))  # held until lock.commit()
        fact = f"r3 {variant} round {round_no} crash fact"
        thread = await chat.create_thread(victim)
        crashed, _ = await chat.submit(victim, thread.thread_id, f"remember: {fact}")

        async def blocked_in_tool() -> bool:
            cur = await lock.execute(WAITERS_SQL)
            row = await cur.fetchone()
            return bool(row and row[0]) and (await _run(container, crashed.id)).status == "running"

        await until("the run to block inside remember_memory", blocked_in_tool)
        queued = []
        for k in range(QUEUED):
            t = await chat.create_thread(other)
            run, _ = await chat.submit(other, t.thread_id, f"remember: r3 queued {round_no}-{k}")
            queued.append(run.id)
        row = await _run(container, crashed.id)
        assert row.worker_id and row.attempt == 1
        dead = {
            "uid": victim,
            "thread_id": thread.thread_id,
            "run_id": crashed.id,
            "request_id": row.request_id,
            "worker_id": row.worker_id,
        }

        killed_at = time.monotonic()
        if variant == "sigkill":
            first.proc.kill()
            first.proc.wait(timeout=30)
        else:
            first.proc.send_signal(signal.SIGSTOP)

        # The survivor: a second worker process with two workers, plus an in-process
        # reconciler racing them. Exactly one of them may fail the run.
        second = _start_worker(container, tmp / f"w2-{variant}-{round_no}.log", count=2)
        await _ready(second)
        mine: list[str] = []
        async with open_agent_runtime(container) as runtime:
            rival = build_worker(container, runtime, name="r3-in-process")

            async def reconciled() -> bool:
                mine.extend(await rival.reconcile())
                return (await _run(container, crashed.id)).status != "running"

            await until("the expired lease to be reconciled", reconciled, within=60, poll=0.2)
        stats["reconcile_seconds_max"] = max(
            stats["reconcile_seconds_max"], round(time.monotonic() - killed_at, 1)
        )
        stats["won_by_in_process_worker"] += mine.count(crashed.id)
        final = await _run(container, crashed.id)
        assert (final.status, final.error_code) == ("failed", "worker_lease_expired")

        await lock.commit()  # release: the frozen worker's blocked statement can now proceed
        if variant == "sigstop":
            first.proc.send_signal(signal.SIGTERM)  # delivered when it resumes
            first.proc.send_signal(signal.SIGCONT)
            await asyncio.to_thread(first.proc.wait, 60)
            log = first.text()
            assert "lost the lease" in log, log[-3000:]
            stats["zombies_refused"] += 1

        # The dead worker's identity can no longer write anything.
        late = await remember(container, dead, f"{fact} (late)")
        assert late["status"] == "error" and late["code"] == "unauthorized_run", late
        runs = container.services.runs
        dead_identity = RunIdentity(**dead)
        with pytest.raises(LeaseLost):
            await runs.record_event(dead_identity, "token", {"text": "late"})
        with pytest.raises(LeaseLost):
            await runs.finish(dead_identity, "completed", output={"reply": "late"})
        stats["late_writes_refused"] += 3

        async def queued_done() -> bool:
            runs = [await _run(container, run_id) for run_id in queued]
            return all(r.status in ("completed", "failed") for r in runs)

        await until("the queued runs to finish", queued_done, within=120)
        async with container.session_factory() as s, s.begin():
            assert await AgentRunRepository(s).reconcile_expired() == []

        # The crashed run: one claim, one running event, one reconciliation, nothing after it.
        events = await _events(container, crashed.id)
        statuses = _status_events(events)
        assert statuses["running"] == 1 and statuses["failed"] == 1, statuses
        failed = [e for e in events if e.data.get("status") == "failed"]
        assert failed[0].data["error"]["code"] == "worker_lease_expired"
        assert events[-1].seq == failed[0].seq, "the dead worker wrote after reconciliation"
        assert (await _run(container, crashed.id)).attempt == 1
        assert fact not in memory_file(container, victim).read_text()

        # Queued runs: each executed exactly once, by the survivor.
        for run_id in queued:
            run = await _run(container, run_id)
            counts = _status_events(await _events(container, run_id))
            assert run.status == "completed" and run.attempt == 1, (run.status, run.attempt)
            assert counts["running"] == 1 and counts["completed"] == 1, counts
            stats["queued_executed_once"] += 1
        lines = [ln for ln in memory_file(container, other).read_text().splitlines() if ln]
        assert sorted(lines) == sorted(f"r3 queued {round_no}-{k}" for k in range(QUEUED))
        stats["crashes"] += 1
        stats["reconciled_once"] += 1
    finally:
        with contextlib.suppress(Exception):
            await lock.rollback()
        await lock.close()
        _stop(first)
        if second is not None:
            _stop(second)


@pytest.mark.parametrize("variant", ["sigkill", "sigstop"])
async def test_worker_crash_mid_run(container: Container, tmp_path: Path, variant: str) -> None:
    rounds = scale(1, 5)
    # Counts, plus one float (reconcile_seconds_max): a Counter's values are ints.
    stats: defaultdict[str, float] = defaultdict(int)
    for round_no in range(rounds):
        await _crash_round(container, tmp_path, variant, round_no, stats)
    assert stats["crashes"] == rounds
    report(f"R3 worker crash [{variant}]", rounds=rounds, **dict(sorted(stats.items())))
