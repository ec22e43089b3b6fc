"""B8's section of the markdown report: one table per configuration, and the goal checks."""

from __future__ import annotations

import math
from typing import Any

CPU_ROLES = ("api", "worker", "postgres", "model_server", "bench_client", "machine_busy_pct")


def _n(value: Any, digits: int = 0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:,.{digits}f}"


def _cpu(cpu: dict[str, float]) -> str:
    parts = []
    for role in CPU_ROLES:
        if role in cpu and (cpu[role] or role in ("api", "machine_busy_pct")):
            name = "machine" if role == "machine_busy_pct" else role
            parts.append(f"{name} {cpu[role]:.0f}")
    return ", ".join(parts)


def _per_run(ms: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.0f}" for k, v in ms.items() if k in ("api", "worker", "postgres"))


def md_b8(b8: dict[str, Any]) -> list[str]:
    goal = b8["goals"]
    lines = [
        "## B8 — capacity with a slow model (a real `yuxi serve`, a scripted OpenAI server)",
        "",
        f"Each run is {b8['model_time_per_run_ms'] / 1000:g} s of model time (two calls of "
        f"{b8['model_delay_s']:g} s: a `remember_memory` tool call, then a reply). Closed loop: "
        "each user posts a turn, follows its SSE events to the end and posts the next, for "
        f"{b8['window_s']:g} s; the turns in flight then drain. runs/s: every turn completed, "
        "over the window and the drain. Latency: POST → `completed`, every turn. queued: "
        "submit → claim; executing: claim → finished (database clock). CPU: % of one core per "
        "role over window and drain (`machine`: the whole machine, other processes included); "
        "CPU ms/run: the processes that execute runs (`api` or `worker`) and PostgreSQL. Lost: "
        "a completed run whose memory write is not in `MEMORY.md` or has no version.",
        "",
    ]
    for name, c in b8["configs"].items():
        lines += [f"**{name}** — {c['label']}", ""]
        lines += [
            "| users | runs/s | p50 ms | p95 ms | queued p50/p95 ms | executing p50/p95 ms "
            "| errors | lost | db conns (active) | CPU % | CPU ms/run |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for users, r in c["levels"].items():
            lat, q, x = r["latency_ms"], r["queued_ms"], r["executing_ms"]
            lines.append(
                f"| {users} | {_n(r['runs_per_s'], 1)} | {_n(lat['p50'])} | {_n(lat['p95'])} "
                f"| {_n(q['p50'])} / {_n(q['p95'])} | {_n(x['p50'])} / {_n(x['p95'])} "
                f"| {r['errors']} | {r['lost_memory_writes']} "
                f"| {r['db_connections_max']} ({r['db_connections_active_max']}) "
                f"| {_cpu(r['cpu_pct'])} | {_per_run(r.get('cpu_ms_per_run', {}))} |"
            )
        lines.append("")
    floor = b8.get("floor", {}).get("levels", {})
    if floor:
        lines += [
            "**floor** — a bare `create_agent` graph compiled once, in its own process "
            "(`benchmarks/b8_floor.py`): no HTTP, SSE, leases, run records, memory gate or "
            "versions. Run once before the configurations and once after them (the row's "
            "figures: after; CPU ms/run: before / after). ours/floor: the CPU per run of the "
            "process(es) executing runs in each configuration (`api` + `worker`) over the "
            "floor's after / before — two figures apart by more than a few percent mean the "
            "machine's speed moved in between.",
            "",
            "| users | runs/s | p50 ms | p95 ms | errors | lost | CPU ms/run | ours/floor CPU |",
            "|---|---|---|---|---|---|---|---|",
        ]
        before = b8.get("floor", {}).get("before", {})
        for users, r in floor.items():
            lat, base = r["latency_ms"], r["cpu_ms_per_run"]
            first = before.get(users, {}).get("cpu_ms_per_run")
            ratios = []
            for name, c in b8["configs"].items():
                ours = c["levels"].get(users, {}).get("cpu_ms_per_run", {})
                spent = sum(v for k, v in ours.items() if k in ("api", "worker"))
                if spent and base:
                    against = f"{spent / base:.2f}×" + (f" / {spent / first:.2f}×" if first else "")
                    ratios.append(f"{name} {against}")
            cpu = (f"{_n(first, 1)} / " if first else "") + _n(base, 1)
            lines.append(
                f"| {users} | {_n(r['runs_per_s'], 1)} | {_n(lat['p50'])} | {_n(lat['p95'])} "
                f"| {r['errors']} | {r['lost_writes']} | {cpu} | {', '.join(ratios)} |"
            )
        lines.append("")
    checks = b8["checks"]
    marks = ", ".join(f"{k} {'✓' if v else '✗'}" for k, v in checks.items())
    lines += [
        f"Goals: 0 errors, 0 lost writes; p95 ≤ {goal['p95_ms_at_users']:,.0f} ms at "
        f"{goal['users']} users. {marks}.",
        "",
    ]
    return lines
