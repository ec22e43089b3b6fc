"""B2's writer processes: each serves commands from the parent over a multiprocessing pipe.

A process bootstraps its own container (own engine, own pool), like a separate worker of the
app, then runs the writers it is given as concurrent tasks. All writers of a command start at
the same ``time.monotonic()`` instant (CLOCK_MONOTONIC is system-wide on Linux, so the parent
and every child read the same clock).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from benchmarks.fixtures import naive_append
from yuxi.agents.tools.tool_result import tool_outcome
from yuxi.identity import RunIdentity


async def _sleep_until(deadline: float) -> None:
    delay = deadline - time.monotonic()
    if delay > 0:
        await asyncio.sleep(delay)


def _remember_call(
    memory: Any, identity: dict[str, str], content: str
) -> Callable[[], Awaitable[Any]]:
    """The deferred ``remember_memory`` call, its identity built inside the call."""
    return lambda: memory.remember_memory(RunIdentity(**identity), content)


async def _ours_writer(
    memory: Any, identity: dict[str, str], contents: list[str]
) -> dict[str, Any]:
    latencies: list[float] = []
    statuses: list[str] = []
    start = time.monotonic()
    for content in contents:
        t0 = time.perf_counter_ns()
        result, _ = await tool_outcome(_remember_call(memory, identity, content))
        latencies.append((time.perf_counter_ns() - t0) / 1e6)
        statuses.append(str(result.get("status")) + ":" + str(result.get("code", "")))
    return {
        "latencies_ms": latencies,
        "statuses": statuses,
        "start": start,
        "end": time.monotonic(),
    }


def _naive_writer(path: str, contents: list[str]) -> dict[str, Any]:
    latencies: list[float] = []
    statuses: list[str] = []
    start = time.monotonic()
    for content in contents:
        t0 = time.perf_counter_ns()
        try:
            naive_append(Path(path), content)
            statuses.append("updated:")
        except OSError as exc:
            statuses.append(f"error:{exc.errno}")
        latencies.append((time.perf_counter_ns() - t0) / 1e6)
    return {
        "latencies_ms": latencies,
        "statuses": statuses,
        "start": start,
        "end": time.monotonic(),
    }


async def _serve(conn: Connection, database_url: str, data_dir: str) -> None:
    from yuxi.bootstrap import bootstrap
    from yuxi.settings import Settings

    # Each writer appends up to a few dozen entries on one run (reset between runs of the
    # benchmark): the per-run write quota at its largest, so it never refuses one.
    container = await bootstrap(
        Settings(
            database_url=database_url,
            data_dir=Path(data_dir),
            db_pool_size=8,
            memory_writes_per_run=1000,
            memory_bytes_per_run=1024 * 1024,
        )
    )
    memory = container.services.memory
    loop = asyncio.get_running_loop()
    # One connection per writer: warm the pool so connecting is not part of the first write.
    async with container.engine.connect():
        pass
    conn.send({"ready": True})
    try:
        while True:
            msg = await loop.run_in_executor(None, conn.recv)
            op = msg.get("op")
            if op == "stop":
                break
            await _sleep_until(float(msg["start_at"]))
            if op == "ours":
                results = await asyncio.gather(
                    *(_ours_writer(memory, w["identity"], w["contents"]) for w in msg["writers"])
                )
            elif op == "naive":
                results = await asyncio.gather(
                    *(
                        asyncio.to_thread(_naive_writer, w["path"], w["contents"])
                        for w in msg["writers"]
                    )
                )
            else:
                raise ValueError(f"unknown op {op!r}")
            conn.send({"results": list(results)})
    finally:
        await container.aclose()


def worker_main(conn: Connection, database_url: str, data_dir: str) -> None:
    """Entry point of a spawned writer process."""
    try:
        asyncio.run(_serve(conn, database_url, data_dir))
    except Exception as exc:  # report, don't hang the parent
        conn.send({"error": f"{type(exc).__name__}: {exc}"})
        raise
    finally:
        conn.close()
