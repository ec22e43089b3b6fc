"""R1 crash: a child process writing memory in a loop is SIGKILLed at random moments.

After every kill MEMORY.md must be byte-for-byte one of the versions the child's writes could
have produced (the old file, or the old file plus the first *j* of this life's entries — never a
torn or partial one), valid UTF-8, with every entry the child reported ``updated`` intact. Publish
temp files left behind by a kill are counted and must be exactly what
``Workspace.cleanup_stale_temp_files`` removes. A retried add of the entry that was in flight
converges: ``unchanged`` when the killed write had been published, ``updated`` when it had not,
and the entry is then present exactly once.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import sys
import time

import pytest

from tests.reliability.crash_writer import entry_is_intact, entry_text
from tests.reliability.support import ROOT, TIMEOUT, report, scale
from tests.support.factories import as_kwargs, make_run, make_user, memory_file, remember
from yuxi.bootstrap import Container

pytestmark = [pytest.mark.pg, pytest.mark.slow, TIMEOUT]

TEMP_RE = re.compile(r"\A\.MEMORY\.md\.[0-9a-f]{32}\.tmp\Z")
#: Above this size the parent resets the file (so the run never reaches the 128 KiB limit).
RESET_BYTES = 48 * 1024
RESET_TEXT = "r1 reset baseline\n"


def appended(base: str, content: str) -> str:
    """The add rule of docs/design.md §5.4, written independently of the product code."""
    head = base.rstrip()
    return f"{head}\n\n{content}\n" if head else f"{content}\n"


def temp_files(container: Container, uid: str) -> list[str]:
    agents = memory_file(container, uid).parent
    return sorted(name for name in os.listdir(agents) if TEMP_RE.match(name))


async def _one_life(
    spec: dict[str, object], delay: float
) -> tuple[list[int], dict[int, str], bytes]:
    """Start a writer, SIGKILL it ``delay`` seconds after it is ready; its started/done lines."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.reliability.crash_writer",
        json.dumps(spec),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
    if first.strip() != b"ready":
        proc.kill()
        await proc.wait()
        err = await proc.stderr.read()
        pytest.fail(f"writer did not start: {first!r} {err.decode(errors='replace')[-2000:]}")
    await asyncio.sleep(delay)
    proc.kill()  # SIGKILL: no cleanup handler of the child runs
    rest, err = await proc.communicate()
    assert proc.returncode == -9, (proc.returncode, err.decode(errors="replace")[-2000:])
    started: list[int] = []
    done: dict[int, str] = {}
    for raw in rest.decode("utf-8").splitlines():
        word, _, tail = raw.partition(" ")
        if word == "start":
            started.append(int(tail))
        elif word == "done":
            index, status, code = tail.split(" ")
            done[int(index)] = status if code == "-" else f"{status}:{code}"
    return started, done, err


async def test_sigkilled_writer_never_tears_memory(container: Container) -> None:
    kills = scale(30, 200)
    seed = int(os.environ.get("YUXI_R1_SEED", "0")) or time.time_ns()
    rng = random.Random(seed)
    uid = await make_user(container, name="r1")
    path = memory_file(container, uid)
    workspace = container.workspace(uid)
    old = path.read_bytes().decode("utf-8")
    stats = {
        "kills": 0,
        "writes_reported": 0,
        "in_flight_published": 0,
        "in_flight_lost": 0,
        "idle_kills": 0,
        "temps_left": 0,
        "max_temps_per_kill": 0,
        "retries_unchanged": 0,
        "retries_updated": 0,
        "resets": 0,
    }
    for life in range(kills):
        # One run per life, as an agent would have: each stays well inside the write quota.
        run = await make_run(container, uid, lease_seconds=24 * 3600)
        spec = {
            "database_url": container.database_url,
            "data_dir": str(container.settings.data_dir),
            "identity": as_kwargs(run),
            "life": life,
            "count": 100_000,
        }
        # Mostly short lives (each kill then lands at a random point of one write), some long.
        delay = rng.uniform(0, 0.05) if rng.random() < 0.5 else rng.uniform(0.05, 0.4)
        started, done, _ = await _one_life(spec, delay)
        stats["kills"] += 1
        assert all(status == "updated" for status in done.values()), done
        stats["writes_reported"] += len(done)

        data = path.read_bytes()
        text = data.decode("utf-8")  # strict: raises on any torn multi-byte sequence
        versions = [old]
        for i in started:
            versions.append(appended(versions[-1], entry_text(life, i)))
        assert text in versions, f"life {life}: MEMORY.md is not a complete version"
        published = versions.index(text)
        assert published >= len(done), "an entry reported updated is missing"
        assert started[: len(done)] == sorted(done), "writer reported out of order"
        for line in filter(None, text.splitlines()):
            assert line == RESET_TEXT.strip() or entry_is_intact(line), line

        temps = temp_files(container, uid)
        stats["temps_left"] += len(temps)
        stats["max_temps_per_kill"] = max(stats["max_temps_per_kill"], len(temps))
        removed = await workspace.cleanup_stale_temp_files("agents", 0)
        assert removed == len(temps)
        assert temp_files(container, uid) == []

        # Retry what was in flight (the write that was running when the child died), then the
        # last reported one: both must converge without duplicating anything.
        in_flight = started[-1] if started and started[-1] not in done else None
        if in_flight is None:
            stats["idle_kills"] += 1
        else:
            was_published = published == len(started)
            stats["in_flight_published" if was_published else "in_flight_lost"] += 1
            retry = await remember(container, run, entry_text(life, in_flight))
            assert retry["status"] == ("unchanged" if was_published else "updated"), retry
            stats["retries_unchanged" if was_published else "retries_updated"] += 1
        if done:
            again = await remember(container, run, entry_text(life, max(done)))
            assert again["status"] == "unchanged", again
            stats["retries_unchanged"] += 1
        text = path.read_bytes().decode("utf-8")
        lines = [line for line in text.splitlines() if line]
        assert len(lines) == len(set(lines)), "an entry is duplicated"
        for i in started:
            if i in done or i == in_flight:
                assert lines.count(entry_text(life, i)) == 1
        if len(text.encode("utf-8")) > RESET_BYTES:
            await container.services.memory.write_memory_file(uid, RESET_TEXT.encode("utf-8"))
            stats["resets"] += 1
            text = RESET_TEXT
        old = text

    assert stats["kills"] >= kills
    assert stats["in_flight_published"] + stats["in_flight_lost"] > 0
    report("R1 crash", **stats, seed=seed)
