"""B2 — contention: 1..16 concurrent writers across OS processes, one uid and distinct uids.

``PROCESSES`` spawned writer processes (multiprocessing, spawn) each bootstrap their own
container. For concurrency ``c`` the ``c`` writers are dealt round-robin over the processes, so
from 2 writers on they always live in different OS processes; each writer has its own claimed
run and appends ``writes`` distinct entries one after the other, all writers starting at the
same instant.

Scopes: ``one_uid`` — every writer appends to the same user's MEMORY.md (fully serialized by
the per-uid lock); ``distinct_uids`` — writer ``i`` has its own user (no shared lock).
The ``naive`` variant runs the same schedule with an unlocked read-modify-write of a plain file.

After each run the file(s) are read back: every entry must be present exactly once. A missing
entry is a lost update; a duplicate would be a double apply. Variants and scopes are
interleaved per concurrency level (a new seeded order each time), repeated ``reps`` times.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks._b2proc import worker_main
from benchmarks.env import BenchEnv
from benchmarks.fixtures import (
    as_kwargs,
    count_entries,
    make_claimed_run,
    make_user,
    restore_memory_quota,
    write_plain,
)
from benchmarks.stats import round_order, summarize
from yuxi.workspace.filesystem import MEMORY_PATH

LEVELS = (1, 2, 4, 8, 16)
PROCESSES = 4
START_DELAY_S = 0.3
MODES = (
    ("ours", "one_uid"),
    ("ours", "distinct_uids"),
    ("naive", "one_uid"),
    ("naive", "distinct_uids"),
)


class _Pool:
    def __init__(self, env: BenchEnv, n: int) -> None:
        ctx = mp.get_context("spawn")
        self.conns = []
        self.procs = []
        for _ in range(n):
            parent, child = ctx.Pipe()
            proc = ctx.Process(
                target=worker_main,
                args=(child, env.database_url, str(env.data_dir)),
                daemon=True,
            )
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)

    async def ready(self) -> None:
        for conn in self.conns:
            msg = await asyncio.to_thread(conn.recv)
            if not msg.get("ready"):
                raise RuntimeError(f"B2 writer process failed to start: {msg}")

    async def run(self, op: str, per_proc: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
        start_at = time.monotonic() + START_DELAY_S
        used = [
            (conn, writers) for conn, writers in zip(self.conns, per_proc, strict=True) if writers
        ]
        for conn, writers in used:
            conn.send({"op": op, "writers": writers, "start_at": start_at})
        results: list[dict[str, Any]] = []
        for conn, _ in used:
            msg = await asyncio.to_thread(conn.recv)
            if "error" in msg:
                raise RuntimeError(f"B2 writer process failed: {msg['error']}")
            results.extend(msg["results"])
        return results

    async def close(self) -> None:
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.send({"op": "stop"})
        for proc in self.procs:
            await asyncio.to_thread(proc.join, 30)
            if proc.is_alive():
                proc.terminate()
                await asyncio.to_thread(proc.join, 5)


def _deal(writers: list[dict[str, Any]], processes: int) -> list[list[dict[str, Any]]]:
    per_proc: list[list[dict[str, Any]]] = [[] for _ in range(processes)]
    for i, writer in enumerate(writers):
        per_proc[i % processes].append(writer)
    return per_proc


async def run_b2(
    env: BenchEnv, *, writes: int, reps: int, levels: tuple[int, ...] = LEVELS
) -> dict[str, Any]:
    c = env.container
    top = max(levels)
    one_uid = await make_user(c, name="b2-one")
    one_runs = [await make_claimed_run(c, one_uid) for _ in range(top)]
    distinct_uids = [await make_user(c, name=f"b2-d{i}") for i in range(top)]
    distinct_runs = [await make_claimed_run(c, uid) for uid in distinct_uids]
    naive_dir = env.data_dir / "b2-naive"
    naive_one = naive_dir / "one" / "MEMORY.md"
    naive_distinct = [naive_dir / f"d{i}" / "MEMORY.md" for i in range(top)]

    pool = _Pool(env, PROCESSES)
    runs: list[dict[str, Any]] = []
    try:
        await pool.ready()
        for rep in range(reps):
            for li, level in enumerate(levels):
                for variant, scope in round_order(list(MODES), rep + li):
                    runs.append(
                        await _one_run(
                            env, pool, variant, scope, level, writes, rep,
                            one_uid=one_uid, one_runs=one_runs,
                            distinct_uids=distinct_uids, distinct_runs=distinct_runs,
                            naive_one=naive_one, naive_distinct=naive_distinct,
                        )
                    )  # fmt: skip
    finally:
        await pool.close()
    return _aggregate(runs, levels, writes, reps)


async def _one_run(
    env: BenchEnv,
    pool: _Pool,
    variant: str,
    scope: str,
    level: int,
    writes: int,
    rep: int,
    *,
    one_uid: str,
    one_runs: list[Any],
    distinct_uids: list[str],
    distinct_runs: list[Any],
    naive_one: Path,
    naive_distinct: list[Path],
) -> dict[str, Any]:
    c = env.container
    tag = uuid.uuid4().hex[:6]
    contents = [
        [f"- b2 {variant} {scope} c{level} r{rep} w{w} n{k} {tag} 并发写入" for k in range(writes)]
        for w in range(level)
    ]
    # Reset the target(s) to empty, untimed.
    if variant == "ours":
        uids = [one_uid] if scope == "one_uid" else distinct_uids[:level]
        for uid in uids:
            ws = c.workspace(uid)
            await ws.replace_file(MEMORY_PATH, b"")
        idents = one_runs[:level] if scope == "one_uid" else distinct_runs[:level]
        await restore_memory_quota(c, idents)
        writers = [
            {"identity": as_kwargs(ident), "contents": contents[w]}
            for w, ident in enumerate(idents)
        ]
    else:
        paths = [naive_one] * level if scope == "one_uid" else naive_distinct[:level]
        for path in set(paths):
            write_plain(path, b"")
        writers = [{"path": str(p), "contents": contents[w]} for w, p in enumerate(paths)]
    results = await pool.run(variant, _deal(writers, PROCESSES))

    # Verify: every entry present exactly once.
    if variant == "ours":
        texts = []
        for uid in [one_uid] if scope == "one_uid" else distinct_uids[:level]:
            ws = c.workspace(uid)
            texts.append((await ws.read_file(MEMORY_PATH, 1 << 20)).decode("utf-8", "replace"))
    else:
        files = [naive_one] if scope == "one_uid" else naive_distinct[:level]
        texts = [p.read_bytes().decode("utf-8", "replace") for p in files]
    expected = [entry for per_writer in contents for entry in per_writer]
    counts = count_entries("\n".join(texts), expected)
    latencies = [v for r in results for v in r["latencies_ms"]]
    statuses = [s for r in results for s in r["statuses"]]
    wall = max(r["end"] for r in results) - min(r["start"] for r in results)
    return {
        "variant": variant,
        "scope": scope,
        "level": level,
        "rep": rep,
        "writes": len(latencies),
        "errors": sum(1 for s in statuses if not s.startswith("updated")),
        "error_kinds": sorted({s for s in statuses if not s.startswith("updated")}),
        "wall_s": wall,
        "latencies_ms": latencies,
        **counts,
        "lost_updates": counts["missing"],
    }


def _aggregate(
    runs: list[dict[str, Any]], levels: tuple[int, ...], writes: int, reps: int
) -> dict[str, Any]:
    series: dict[str, dict[str, Any]] = {}
    for variant, scope in MODES:
        key = f"{variant}/{scope}"
        per_level: dict[str, Any] = {}
        for level in levels:
            mine = [
                r for r in runs if (r["variant"], r["scope"], r["level"]) == (variant, scope, level)
            ]
            lat = [v for r in mine for v in r["latencies_ms"]]
            total_writes = sum(r["writes"] for r in mine)
            total_wall = sum(r["wall_s"] for r in mine)
            per_level[str(level)] = {
                "writers": level,
                "writes": total_writes,
                "writes_per_s": total_writes / total_wall if total_wall else float("nan"),
                "latency_ms": summarize(lat),
                "lost_updates": sum(r["lost_updates"] for r in mine),
                "duplicated": sum(r["duplicated"] for r in mine),
                "errors": sum(r["errors"] for r in mine),
                "error_kinds": sorted({k for r in mine for k in r["error_kinds"]}),
            }
        series[key] = per_level
    ratios: dict[str, Any] = {}
    for scope in ("one_uid", "distinct_uids"):
        ours, naive = series[f"ours/{scope}"], series[f"naive/{scope}"]
        ratios[scope] = {
            str(level): {
                "p99_ours/naive": ours[str(level)]["latency_ms"]["p99"]
                / naive[str(level)]["latency_ms"]["p99"],
                "throughput_ours/naive": ours[str(level)]["writes_per_s"]
                / naive[str(level)]["writes_per_s"],
            }
            for level in levels
        }
    scaling = {
        "ours_distinct_over_one_uid_throughput": {
            str(level): series["ours/distinct_uids"][str(level)]["writes_per_s"]
            / series["ours/one_uid"][str(level)]["writes_per_s"]
            for level in levels
        }
    }
    return {
        "levels": list(levels),
        "processes": PROCESSES,
        "writes_per_writer": writes,
        "reps": reps,
        "series": series,
        "ratios": ratios,
        "scaling": scaling,
        "lost_updates_total": {
            key: sum(v["lost_updates"] for v in per_level.values())
            for key, per_level in series.items()
        },
        "runs": [
            {
                k: (round(v, 4) if isinstance(v, float) else v)
                for k, v in r.items()
                if k != "latencies_ms"
            }
            for r in runs
        ],
    }
