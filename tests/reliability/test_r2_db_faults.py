"""R2 database faults: connections terminated and the server stopped while memory is written.

Contract (design.md §5.5): ``remember_memory`` never raises for a storage failure; it answers
``storage_unavailable`` and changes nothing it reports as unchanged. A write whose transaction
dies *after* its publish (the commit is the last step) may have reached the file even though it
reports ``storage_unavailable`` — so such an entry must be absent or present exactly once, and a
retry converges. An entry reported ``updated`` is never lost. Once the database is back, the same
service object writes again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest

from tests.reliability.support import LARGEST_MEMORY_QUOTA, ROOT, TIMEOUT, report, scale
from tests.support.factories import make_run, make_user, memory_file, remember
from tests.support.waiting import until
from yuxi.bootstrap import Container, bootstrap
from yuxi.db.migrate import upgrade_sync
from yuxi.identity import RunIdentity
from yuxi.settings import Settings

pytestmark = [pytest.mark.pg, pytest.mark.slow, TIMEOUT]

ALLOWED = ("updated", "storage_unavailable")
MAX_ENTRIES_PER_WRITER = 600


def _outcome(result: object) -> str:
    if not isinstance(result, dict):
        return f"non-dict:{type(result).__name__}"
    if result.get("status") == "error":
        return str(result.get("code"))
    return str(result.get("status"))


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_bytes().decode("utf-8").splitlines() if line]


@dataclass
class Ledger:
    """What one user's writers attempted and what they were told."""

    attempted: set[str] = field(default_factory=set)
    confirmed: list[str] = field(default_factory=list)  # reported updated, in report order
    unavailable: list[str] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)


async def _write(container: Container, run: RunIdentity, ledger: Ledger, content: str) -> str:
    ledger.attempted.add(content)
    try:
        result = await remember(container, run, content)
    except Exception as exc:  # the contract: the tool boundary never raises
        outcome = f"exception:{type(exc).__name__}:{exc}"
    else:
        outcome = _outcome(result)
    ledger.outcomes[outcome] += 1
    if outcome == "updated":
        ledger.confirmed.append(content)
    elif outcome == "storage_unavailable":
        ledger.unavailable.append(content)
    return outcome


def _check_file(path: Path, ledger: Ledger) -> Counter[str]:
    counts = Counter(_lines(path))
    unknown = set(counts) - ledger.attempted
    assert not unknown, f"lines nobody wrote: {sorted(unknown)[:3]}"
    duplicated = [line for line, n in counts.items() if n > 1]
    assert not duplicated, f"duplicated entries: {duplicated[:3]}"
    return counts


PHASE_SECONDS = 6


async def test_terminated_connections_during_writes(container: Container) -> None:
    # The full form repeats the reduced one with fresh users, so no MEMORY.md ever grows
    # towards the 128 KiB limit (that would turn writes into memory_too_large).
    phases = scale(1, 10)
    totals: Counter[str] = Counter()
    for phase in range(phases):
        totals.update(await _terminate_phase(container, phase))
    report(
        "R2a pg_terminate_backend",
        phases=phases,
        seconds=phases * PHASE_SECONDS,
        **dict(sorted(totals.items())),
        exceptions=0,
    )


async def _terminate_phase(container: Container, phase: int) -> Counter[str]:
    """Writers (two per user, three users) while a loop terminates every backend."""
    seconds = PHASE_SECONDS
    users, writers_per_user = 3, 2
    rng = random.Random(time.time_ns())
    uids = [await make_user(container, name=f"r2a-{phase}-{u}") for u in range(users)]
    runs = {
        uid: [await make_run(container, uid, lease_seconds=3600) for _ in range(writers_per_user)]
        for uid in uids
    }
    ledgers = {uid: Ledger() for uid in uids}
    stop = asyncio.Event()
    terminated = 0
    violations: list[str] = []

    async def writer(uid: str, w: int) -> None:
        n = 0
        # Bounded, so a fast machine never pushes MEMORY.md (2 writers x 600 x ~45 B, plus the
        # retries below) near the 128 KiB limit, where writes would become memory_too_large.
        while not stop.is_set() and n < MAX_ENTRIES_PER_WRITER:
            content = f"r2a {uid[-6:]} w{w} n{n} 数据库故障 ✓"
            n += 1
            await _write(container, runs[uid][w], ledgers[uid], content)

    async def killer() -> None:
        nonlocal terminated
        async with await psycopg.AsyncConnection.connect(
            container.database_url, autocommit=True
        ) as conn:
            while not stop.is_set():
                cur = await conn.execute(
                    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) "
                    "FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
                )
                row = await cur.fetchone()
                terminated += int(row[0]) if row else 0
                await asyncio.sleep(rng.uniform(0.002, 0.04))

    async def monitor() -> None:
        # While the faults go on: no entry that was already reported updated may vanish.
        while not stop.is_set():
            for uid in uids:
                confirmed = list(ledgers[uid].confirmed)
                present = set(_lines(memory_file(container, uid)))
                missing = [c for c in confirmed if c not in present]
                if missing:
                    violations.append(f"{uid}: lost {missing[:2]}")
            await asyncio.sleep(0.01)

    tasks = [asyncio.create_task(writer(uid, w)) for uid in uids for w in range(writers_per_user)]
    tasks += [asyncio.create_task(killer()), asyncio.create_task(monitor())]
    await asyncio.sleep(seconds)
    stop.set()
    await asyncio.gather(*tasks)
    assert violations == []

    totals: Counter[str] = Counter()
    present_unavailable = 0
    for uid in uids:
        ledger = ledgers[uid]
        totals.update(ledger.outcomes)
        assert set(ledger.outcomes) <= set(ALLOWED), ledger.outcomes
        counts = _check_file(memory_file(container, uid), ledger)
        assert all(counts[c] == 1 for c in ledger.confirmed), "an updated entry was lost"
        present_unavailable += sum(1 for c in ledger.unavailable if counts[c] == 1)
    assert totals["updated"] > 0 and totals["storage_unavailable"] > 0, totals
    assert terminated > 0

    # Recovery: the same service writes again, and retrying every refused entry converges.
    retried: Counter[str] = Counter()
    for uid in uids:
        ledger = ledgers[uid]
        before = Counter(_lines(memory_file(container, uid)))
        for content in ledger.unavailable:
            result = await remember(container, runs[uid][0], content)
            expected = "unchanged" if before[content] else "updated"
            assert result["status"] == expected, (result, content)
            retried[expected] += 1
        fresh = f"r2a {uid[-6:]} after recovery"
        assert await _write(container, runs[uid][1], ledger, fresh) == "updated"
        counts = _check_file(memory_file(container, uid), ledger)
        assert all(counts[c] == 1 for c in [*ledger.confirmed, *ledger.unavailable])
    return Counter(
        backends_terminated=terminated,
        writes=sum(totals.values()),
        updated=totals["updated"],
        storage_unavailable=totals["storage_unavailable"],
        unavailable_but_published=present_unavailable,
        retried_unchanged=retried["unchanged"],
        retried_updated=retried["updated"],
    )


async def _pg(action: str, pgdata: Path) -> str:
    """Start/stop the throwaway server in a fresh process (see ``embedded_pg``)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.reliability.embedded_pg",
        action,
        str(pgdata),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 0, err.decode(errors="replace")[-3000:]
    return out.decode().strip().splitlines()[-1]


async def _stream(
    container: Container,
    run: RunIdentity,
    ledger: Ledger,
    prefix: str,
    server_down: asyncio.Event,
    outcomes: Counter[str],
) -> None:
    """Write until three writes were refused after the server was reported down."""
    n = 0
    refused_after_down = 0
    while refused_after_down < 3:
        outcome = await _write(container, run, ledger, f"{prefix} n{n}")
        outcomes[outcome] += 1
        n += 1
        if server_down.is_set() and outcome == "storage_unavailable":
            refused_after_down += 1


def _has_landed(outcomes: Counter[str]) -> Callable[[], bool]:
    return lambda: outcomes["updated"] > 0


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_server_stopped_during_writes_then_restarted() -> None:
    down_writes = scale(20, 200)
    cycles = scale(1, 5)
    base = Path(tempfile.mkdtemp(prefix="yuxi-r2b-"))
    pgdata = base / "pgdata"
    container: Container | None = None
    stats: Counter[str] = Counter()
    down_latencies: list[float] = []
    try:
        url = await _pg("start", pgdata)
        await asyncio.to_thread(upgrade_sync, url)
        container = await bootstrap(
            Settings(
                database_url=url, data_dir=base / "data", db_pool_size=8, **LARGEST_MEMORY_QUOTA
            )
        )
        uid = await make_user(container, name="r2b")
        run = await make_run(container, uid, lease_seconds=24 * 3600)
        path = memory_file(container, uid)
        ledger = Ledger()
        for n in range(5):
            assert await _write(container, run, ledger, f"r2b before n{n}") == "updated"

        for cycle in range(cycles):
            # A writer keeps going while the server is stopped underneath it.
            server_down = asyncio.Event()
            in_stream: Counter[str] = Counter()
            writer = asyncio.create_task(
                _stream(container, run, ledger, f"r2b c{cycle} stream", server_down, in_stream)
            )
            # The server goes down under a writer that is really writing.
            await until("the writer to land a write", _has_landed(in_stream), within=60)
            assert await _pg("stop", pgdata) == "stopped"
            server_down.set()
            await asyncio.wait_for(writer, timeout=60)
            assert set(in_stream) <= set(ALLOWED), in_stream
            assert in_stream["updated"] > 0 and in_stream["storage_unavailable"] >= 3
            stats.update({f"stream_{k}": v for k, v in in_stream.items()})

            # Down: every write is refused quickly and the file does not change at all.
            frozen = _sha(path)
            for n in range(down_writes):
                started = time.perf_counter()
                outcome = await _write(container, run, ledger, f"r2b c{cycle} down n{n}")
                down_latencies.append(time.perf_counter() - started)
                assert outcome == "storage_unavailable"
            assert _sha(path) == frozen
            stats["down_refused"] += down_writes

            # Back: the same container writes again (pool_pre_ping replaces dead connections).
            assert await _pg("start", pgdata) == url
            assert await _write(container, run, ledger, f"r2b c{cycle} back") == "updated"
            stats["restarts"] += 1

        before = Counter(_lines(path))
        for content in ledger.unavailable:
            result = await remember(container, run, content)
            expected = "unchanged" if before[content] else "updated"
            assert result["status"] == expected, (result, content)
            stats[f"retried_{expected}"] += 1
        counts = _check_file(path, ledger)
        assert all(counts[c] == 1 for c in [*ledger.confirmed, *ledger.unavailable])
        assert set(ledger.outcomes) <= set(ALLOWED), ledger.outcomes
    finally:
        if container is not None:
            await container.aclose()
        with contextlib.suppress(Exception):
            await _pg("stop", pgdata)
        shutil.rmtree(base, ignore_errors=True)
    report(
        "R2b server stopped",
        cycles=cycles,
        **dict(sorted(stats.items())),
        down_refusal_max_ms=round(max(down_latencies) * 1000, 1),
        exceptions=0,
    )
