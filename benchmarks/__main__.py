"""``python -m benchmarks [--quick] [--out DIR] [--scale quick|full|N,N,...] [--only B1,B4] ...``

Runs B1–B8 on one PostgreSQL (``YUXI_BENCH_DATABASE_URL`` / ``--database-url``, else an
embedded server in a fresh temp directory) and writes ``report.json``, ``report.md`` and
``b2_latency_vs_concurrency.png`` into ``--out`` (default ``bench-results/``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.env import close_env, open_env


@dataclass(frozen=True)
class Plan:
    b1_rounds: int
    b1_warmup: int
    b2_writes: int
    b2_reps: int
    b3_rounds: int
    b3_warmup: int
    b4_scale: str
    b4_rounds: int
    b4_warmup: int
    b4_budget_s: float
    b6_rounds: int
    b6_warmup: int
    b6_idle_s: float
    b8_levels: tuple[int, ...] = (1, 10, 100, 300)
    b8_window_s: float = 15.0
    b8_model_delay_s: float = 0.5


PLANS = {
    "quick": Plan(300, 10, 8, 1, 600, 20, "quick", 30, 2, 2.0, 20, 3, 10.0, (1, 10), 5.0),
    "full": Plan(1000, 30, 25, 3, 2000, 50, "full", 60, 2, 15.0, 100, 10, 30.0),
}
ALL = ("B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8")


def _args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    p.add_argument("--quick", action="store_true", help="small, fast smoke run (< ~3 min)")
    p.add_argument("--out", type=Path, default=Path("bench-results"), help="output directory")
    p.add_argument(
        "--scale",
        default=None,
        help="B4 stages: 'quick' (10k,100k), 'full' (10k,100k,1M; the default without "
        "--quick) or comma-separated total row counts",
    )
    p.add_argument("--b4-users", type=int, default=1000, help="B4 users (default 1000)")
    p.add_argument("--only", default=",".join(ALL), help="comma-separated subset, e.g. B1,B4")
    p.add_argument(
        "--database-url",
        default=None,
        help="PostgreSQL server (default: $YUXI_BENCH_DATABASE_URL, else embedded)",
    )
    p.add_argument(
        "--data-dir", type=Path, default=None, help="where workspaces live (default: temp)"
    )
    p.add_argument("--keep-db", action="store_true", help="keep the bench database and temp dir")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p.parse_args(argv)


async def _main(args: argparse.Namespace, argv: list[str]) -> int:
    from benchmarks.b1_write import run_b1
    from benchmarks.b2_contention import run_b2
    from benchmarks.b3_read import run_b3
    from benchmarks.b4_history import parse_scale, run_b4
    from benchmarks.b5_context import run_b5
    from benchmarks.b6_runtime import run_b6
    from benchmarks.b7_recall import SIZES as B7_SIZES
    from benchmarks.b7_recall import run_b7
    from benchmarks.b8_capacity import run_b8

    mode = "quick" if args.quick else "full"
    plan = PLANS[mode]
    only = {part.strip().upper() for part in args.only.split(",") if part.strip()}
    totals = parse_scale(args.scale or plan.b4_scale)
    out: Path = args.out
    os.makedirs(out, exist_ok=True)
    started = time.perf_counter()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    print(f"[bench] mode {mode}; running {sorted(only)}; B4 stages {totals}", flush=True)
    env = await open_env(database_url=args.database_url, data_dir=args.data_dir)
    print(
        f"[bench] PostgreSQL {env.info['server_kind']} {env.info['server_version']}, "
        f"database {env.db_name}; workspaces on {env.info['workspace_filesystem']}",
        flush=True,
    )
    results: dict[str, Any] = {}
    errors: dict[str, str] = {}
    durations: dict[str, float] = {}
    steps: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        ("B1", lambda: run_b1(env, rounds=plan.b1_rounds, warmup=plan.b1_warmup)),
        ("B2", lambda: run_b2(env, writes=plan.b2_writes, reps=plan.b2_reps)),
        ("B3", lambda: run_b3(env, rounds=plan.b3_rounds, warmup=plan.b3_warmup)),
        (
            "B4",
            lambda: run_b4(
                env,
                totals=totals,
                users=args.b4_users,
                rounds=plan.b4_rounds,
                warmup=plan.b4_warmup,
                budget_s=plan.b4_budget_s,
                seed=args.seed,
                progress=not args.no_progress,
            ),
        ),
        ("B5", lambda: run_b5(env, seed=args.seed + 5)),
        (
            "B6",
            lambda: run_b6(
                env, rounds=plan.b6_rounds, warmup=plan.b6_warmup, idle_seconds=plan.b6_idle_s
            ),
        ),
        ("B7", lambda: run_b7(env, **B7_SIZES[mode], seed=args.seed)),
        (
            "B8",
            lambda: run_b8(
                env,
                levels=plan.b8_levels,
                window_s=plan.b8_window_s,
                model_delay_s=plan.b8_model_delay_s,
            ),
        ),
    ]
    try:
        for name, step in steps:
            if name not in only:
                continue
            print(f"[bench] {name} ...", flush=True)
            t0 = time.perf_counter()
            try:
                results[name.lower()] = await step()
            except Exception as exc:
                traceback.print_exc()
                errors[name] = f"{type(exc).__name__}: {exc}"
            durations[name] = time.perf_counter() - t0
            print(f"[bench] {name} done in {durations[name]:.1f}s", flush=True)
    finally:
        await close_env(env, keep_db=args.keep_db)
    meta = {
        "started_at": started_at,
        "mode": mode,
        "argv": argv,
        "plan": plan.__dict__,
        "b4_totals": list(totals),
        "total_s": time.perf_counter() - started,
        "durations_s": durations,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "db": env.info,
    }
    doc = {"meta": meta, "results": results, "errors": errors}
    files = [report.write_json(doc, out), report.write_markdown(doc, out)]
    if "b2" in results:
        files.append(report.write_chart(results["b2"], out))
    print(f"[bench] wrote {', '.join(str(f) for f in files)} in {meta['total_s']:.0f}s", flush=True)
    return 1 if errors else 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    return asyncio.run(_main(_args(argv), argv))


if __name__ == "__main__":
    raise SystemExit(main())
