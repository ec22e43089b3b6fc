"""B8 — capacity with a model that takes its time.

A scripted OpenAI-compatible server (:mod:`benchmarks.model_server`) answers every call after a
fixed delay; a run is two calls — a ``remember_memory`` tool call, then a reply — so a run's own
model time is twice the delay. Yuxi reaches it the way a deployment would (``YUXI_MODEL=
openai:…``, ``YUXI_MODEL_BASE_URL``). Closed loop: each of ``users`` users posts a turn to its
thread, follows the run's SSE events until it settles, and at once posts the next, for
``window_s`` seconds; then the turns in flight drain.

Per configuration (each its own processes on the bench database) and per number of users:
completed runs/s in the window, POST → completed p50/p95 over every turn, where a run's time
went by the database's clock (submit → claim: queued for a worker slot; claim → finished:
executing), CPU per process (percent of one core) and of the whole machine, the most database
connections open at once, errors (an HTTP error, a run that did not complete) and **lost memory
writes**: a completed run whose marker is missing from its user's ``MEMORY.md`` or that has no
memory version of its own.

The **framework floor** (:mod:`benchmarks.b8_floor`) at the same levels, against the same model
server and database, once before the configurations and once after them: a bare
``create_agent`` graph, compiled once, in a process of its own, with none of Yuxi's guarantees.
Its CPU per run is the baseline Yuxi's is read against; the two runs of it show how far the
machine's speed moved meanwhile, and each ratio is reported against both.

Goals (issue 29): no errors, no lost writes; at 100 users p95 ≤ 2× the run's model time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
import psycopg

from benchmarks import b8_processes as procs
from benchmarks.b8_floor import run_floor
from benchmarks.env import BenchEnv
from benchmarks.stats import summarize

LEVELS = (1, 10, 100, 300)
MODEL_DELAY_S = 0.5
MODEL_CALLS_PER_RUN = 2
GOAL_P95_OVER_MODEL_TIME = 2.0
GOAL_USERS = 100
SETTLED = ("completed", "failed", "cancelled", "interrupted")


@dataclass(frozen=True)
class Config:
    """``apis`` ``yuxi serve`` processes with ``serve_env``; ``workers`` ``yuxi worker``
    processes with ``worker_env``."""

    label: str
    apis: int = 1
    serve_env: dict[str, str] = field(default_factory=dict)
    workers: int = 0
    worker_env: dict[str, str] = field(default_factory=dict)
    #: Levels above this many users are skipped (reported as skipped).
    max_users: int | None = None


CONFIGS: dict[str, Config] = {
    # (a) the defaults before issue 29 — two workers, one run each — kept to show the queue
    "before": Config(
        "`yuxi serve` as before issue 29: 2 workers × 1 run",
        serve_env={"YUXI_WORKERS": "2", "YUXI_WORKER_CONCURRENCY": "1"},
        max_users=100,  # at 300 users the drain alone is minutes behind two slots
    ),
    # (b) the recommended setting, which is now the default
    "defaults": Config("one `yuxi serve`, defaults (the recommended setting)"),
    # (b') the defaults on the standard library's event loop instead of uvloop: the loop's
    # share of a run's CPU, side by side
    "asyncio": Config(
        "one `yuxi serve`, defaults but YUXI_EVENT_LOOP=asyncio",
        serve_env={"YUXI_EVENT_LOOP": "asyncio"},
        max_users=100,
    ),
    # (c) a process per core; four processes' pools sized to fit the embedded server's
    # max_connections (100): up to pool + 8 (checkpointer) + 1 (listener) each
    "split": Config(
        "2 × `yuxi serve` (YUXI_WORKERS=0) + 2 × `yuxi worker`, YUXI_DB_POOL_SIZE=12",
        apis=2,
        serve_env={"YUXI_WORKERS": "0", "YUXI_DB_POOL_SIZE": "12"},
        workers=2,
        worker_env={"YUXI_DB_POOL_SIZE": "12"},
    ),
}


def _base_env(env: BenchEnv, model_url: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("YUXI_")},
        "YUXI_DATABASE_URL": env.database_url,
        "YUXI_DATA_DIR": str(env.container.settings.data_dir),
        "YUXI_MODEL": "openai:b8-scripted",
        "YUXI_MODEL_BASE_URL": model_url,
        "YUXI_MODEL_API_KEY": "sk-b8-not-a-secret",
        "YUXI_HOST": "127.0.0.1",
    }


async def _start(env: BenchEnv, name: str, cfg: Config, model_url: str) -> list[procs.Proc]:
    started: list[procs.Proc] = []
    base = _base_env(env, model_url)
    try:
        for i in range(cfg.apis):
            port = procs.free_port()
            p = procs.Proc(
                "api",
                procs.yuxi_argv("serve"),
                {**base, **cfg.serve_env, "YUXI_PORT": str(port)},
                env.tmp_root / f"b8-{name}-api{i}.log",
                health_url=f"http://127.0.0.1:{port}/healthz",
            )
            await p.start()
            started.append(p)
        for i in range(cfg.workers):
            p = procs.Proc(
                "worker",
                procs.yuxi_argv("worker"),
                {**base, **cfg.worker_env},
                env.tmp_root / f"b8-{name}-worker{i}.log",
                ready_line="running",
            )
            await p.start()
            started.append(p)
    except BaseException:
        for p in started:
            await p.stop()
        raise
    return started


@dataclass
class _Turn:
    uid: str
    marker: str
    run_id: str | None
    t0: float
    t1: float
    status: str


async def _follow(client: httpx.AsyncClient, run_id: str, token: str) -> str:
    headers = {"Accept": "text/event-stream", "Authorization": f"Bearer {token}"}
    async with client.stream("GET", f"/api/v1/runs/{run_id}/events", headers=headers) as resp:
        resp.raise_for_status()
        async for line in resp.aiter_lines():
            if not line.startswith("data:"):
                continue
            event = json.loads(line[5:])
            data = event["data"]
            if event["type"] == "run_status" and data["status"] in SETTLED:
                code = (data.get("error") or {}).get("code")
                return str(data["status"]) + (f" ({code})" if code else "")
    return "stream_ended"


async def _user(
    client: httpx.AsyncClient,
    user: tuple[str, str, str],
    tag: str,
    stop_at: float,
    turns: list[_Turn],
    errors: list[str],
) -> None:
    uid, token, thread = user
    n = 0
    while time.perf_counter() < stop_at:
        marker = f"b8 note {tag} {uid} turn {n}"
        n += 1
        t0, run_id, status = time.perf_counter(), None, "error"
        try:
            resp = await client.post(
                f"/api/v1/threads/{thread}/runs",
                json={"input": marker},
                headers={"Authorization": f"Bearer {token}"},
            )
            if resp.status_code >= 300:
                status = f"http_{resp.status_code}"
            else:
                run_id = str(resp.json()["run_id"])
                status = await _follow(client, run_id, token)
        except Exception as exc:  # counted; the user goes on
            status = f"{type(exc).__name__}: {exc}"[:200]
        turns.append(_Turn(uid, marker, run_id, t0, time.perf_counter(), status))
        if status != "completed":
            errors.append(status)
            await asyncio.sleep(0.2)


async def _users(env: BenchEnv, count: int, tag: str) -> list[tuple[str, str, str]]:
    c, gate = env.container, asyncio.Semaphore(8)

    async def one(i: int) -> tuple[str, str, str]:
        async with gate:
            issued = await c.services.users.create_user(f"b8-{tag}-{i}")
            await c.services.users.set_memory_enabled(issued.uid, True)
            thread = await c.services.chat.create_thread(issued.uid)
            return issued.uid, issued.token, thread.thread_id

    return list(await asyncio.gather(*(one(i) for i in range(count))))


_PHASES = """
SELECT id, extract(epoch FROM started_at - created_at) * 1000,
       extract(epoch FROM finished_at - started_at) * 1000
FROM agent_runs WHERE id = ANY(%s)
"""
_VERSIONS = "SELECT run_id FROM memory_versions WHERE run_id = ANY(%s)"
_TOOL_RESULTS = (
    "SELECT run_id, data->>'result' FROM run_events WHERE run_id = ANY(%s)"
    " AND event_type = 'tool_end'"
)


def _refusal(result: str | None) -> str | None:
    """The error code of a ``remember_memory`` result that refused the write, else None."""
    try:
        parsed = json.loads(result or "")
    except ValueError:
        return None
    if isinstance(parsed, dict) and parsed.get("status") == "error":
        return str(parsed.get("code"))
    return None


_CONNECTIONS = (
    "SELECT count(*), count(*) FILTER (WHERE state = 'active') FROM pg_stat_activity"
    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


async def _watch_connections(url: str, stop: asyncio.Event, most: list[int]) -> None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        while not stop.is_set():
            row = await (await conn.execute(_CONNECTIONS)).fetchone()
            if row is not None:
                most[0], most[1] = max(most[0], int(row[0])), max(most[1], int(row[1]))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)


async def _check(env: BenchEnv, turns: list[_Turn]) -> dict[str, Any]:
    """Lost memory writes and the runs' phases, once every turn has settled."""
    done = [t for t in turns if t.status == "completed" and t.run_id]
    ids = [t.run_id for t in done]
    async with await psycopg.AsyncConnection.connect(env.database_url, autocommit=True) as conn:
        versioned = {r[0] for r in await (await conn.execute(_VERSIONS, (ids,))).fetchall()}
        phases = await (await conn.execute(_PHASES, (ids,))).fetchall()
        rows = await (await conn.execute(_TOOL_RESULTS, (ids,))).fetchall()
    results: dict[str, str | None] = {str(r[0]): r[1] for r in rows}
    files: dict[str, str] = {}
    lost, refused = 0, []
    for t in done:
        if t.uid not in files:
            path = env.container.workspace(t.uid).directory / "agents" / "MEMORY.md"
            files[t.uid] = path.read_text("utf-8") if path.exists() else ""
        # Whole markers only: "… turn 1" must not be found inside "… turn 10".
        landed = re.search(re.escape(t.marker) + r"(?!\d)", files[t.uid]) is not None
        if not landed or t.run_id not in versioned:
            # The scripted model replies whatever the tool answered: a write the tool refused
            # (with a code, nothing changed) is an error the user was told of, not a lost write.
            code = _refusal(results.get(t.run_id or ""))
            if code is None:
                lost += 1
            else:
                refused.append(f"memory write refused ({code})")
    return {
        "lost_memory_writes": lost,
        "refused_writes": refused,
        "queued_ms": summarize([float(r[1]) for r in phases if r[1] is not None]),
        "executing_ms": summarize([float(r[2]) for r in phases if r[2] is not None]),
    }


async def _level(
    env: BenchEnv,
    apis: list[str],
    users: int,
    tag: str,
    window_s: float,
    sampler: procs.CpuSampler,
) -> dict[str, Any]:
    people = await _users(env, users, tag)
    turns: list[_Turn] = []
    errors: list[str] = []
    # An idle connection is dropped well before the server's keep-alive timeout (uvicorn's
    # 5 s, the same as httpx's default expiry): a request sent on a connection the server is
    # closing that very moment fails (ReadError, "Server disconnected without sending a
    # response") — the client's race, not the server's error, and at 300 users it happened.
    limits = httpx.Limits(
        max_connections=None, max_keepalive_connections=None, keepalive_expiry=2.0
    )
    timeout = httpx.Timeout(600.0)
    clients = [httpx.AsyncClient(base_url=u, limits=limits, timeout=timeout) for u in apis]
    watch_stop, most = asyncio.Event(), [0, 0]
    watcher = asyncio.create_task(_watch_connections(env.database_url, watch_stop, most))
    try:
        sampler.begin()
        start = time.perf_counter()
        stop_at = start + window_s
        tasks = [
            asyncio.create_task(
                _user(clients[i % len(clients)], person, tag, stop_at, turns, errors)
            )
            for i, person in enumerate(people)
        ]
        await asyncio.sleep(max(0.0, stop_at - time.perf_counter()))
        in_window = sum(1 for t in turns if t.status == "completed" and t.t1 <= stop_at)
        await asyncio.gather(*tasks)
        drained = time.perf_counter() - stop_at
        cpu = sampler.end()  # over the window and the drain: every turn's work
    finally:
        watch_stop.set()
        await watcher
        for client in clients:
            await client.aclose()
    latencies = [(t.t1 - t.t0) * 1000 for t in turns if t.status == "completed"]
    checked = await _check(env, turns)
    errors += checked.pop("refused_writes")
    elapsed = window_s + drained
    cpu_s = {k: v / 100 * elapsed for k, v in cpu.items() if k != "machine_busy_pct"}
    return {
        "users": users,
        "turns": len(turns),
        "completed_in_window": in_window,
        "runs_per_s_window": in_window / window_s,
        # every turn posted in the window, over the window and its drain: what was sustained
        "runs_per_s": len(latencies) / elapsed,
        "cpu_ms_per_run": {
            k: round(v * 1000 / max(1, len(latencies)), 1) for k, v in cpu_s.items() if v
        },
        "latency_ms": summarize(latencies),
        **checked,
        "errors": len(errors),
        "error_samples": sorted(set(errors))[:5],
        "drain_s": drained,
        "cpu_pct": cpu,
        "db_connections_max": most[0],
        "db_connections_active_max": most[1],
    }


async def run_b8(
    env: BenchEnv,
    *,
    levels: tuple[int, ...] = LEVELS,
    window_s: float = 20.0,
    model_delay_s: float = MODEL_DELAY_S,
    configs: tuple[str, ...] = tuple(CONFIGS),
    floor: bool = True,
) -> dict[str, Any]:
    model_port = procs.free_port()
    model = procs.model_server(model_port, model_delay_s, env.tmp_root / "b8-model.log")
    await model.start()
    pg = procs.postmaster_pid(env.database_url)
    if pg is None:
        print(
            "[bench] B8: the database server's processes are not visible here: no CPU", flush=True
        )
    out: dict[str, Any] = {}
    floor_rows: dict[str, Any] = {}
    floor_before: dict[str, Any] = {}

    async def floor_at(users: int, when: str) -> dict[str, Any]:
        row = await run_floor(
            env.database_url,
            f"http://127.0.0.1:{model_port}/v1",
            users,
            window_s,
            env.tmp_root / f"b8-floor-{when}-{users}.log",
        )
        lat = row["latency_ms"]
        print(
            f"[bench] B8 floor ({when}) {users:>4} users: {row['runs_per_s']:.1f} runs/s, "
            f"p50 {lat['p50']:.0f} ms, p95 {lat['p95']:.0f} ms, errors {row['errors']}, "
            f"lost {row['lost_writes']}, cpu {row['cpu_ms_per_run']:.1f} ms/run",
            flush=True,
        )
        return row

    try:
        # The framework floor (benchmarks.b8_floor) at the same levels, against the same model
        # server and database: what a bare create_agent graph costs per run. It runs before the
        # configurations and again after them, so each ratio is read against both ends: on a
        # shared machine whose speed drifts within minutes, the two floors show how far it moved.
        for users in levels if floor else ():
            floor_before[str(users)] = await floor_at(users, "before")
        for name in configs:
            cfg = CONFIGS[name]
            print(f"[bench] B8 {name}: {cfg.label}", flush=True)
            started = await _start(env, name, cfg, f"http://127.0.0.1:{model_port}/v1")
            apis = [p.health_url.rsplit("/", 1)[0] for p in started if p.health_url]
            sampler = procs.CpuSampler(
                roles={
                    "api": [p.pid for p in started if p.role == "api" and p.pid],
                    "worker": [p.pid for p in started if p.role == "worker" and p.pid],
                    "model_server": [model.pid] if model.pid else [],
                    "bench_client": [os.getpid()],
                },
                tree_roles={"postgres": pg} if pg else {},
            )
            rows: dict[str, Any] = {}
            try:
                for users in levels:
                    if cfg.max_users is not None and users > cfg.max_users:
                        continue
                    tag = f"{name[:4]}{users}-{uuid.uuid4().hex[:4]}"
                    rows[str(users)] = row = await _level(env, apis, users, tag, window_s, sampler)
                    lat = row["latency_ms"]
                    print(
                        f"[bench] B8 {name} {users:>4} users: {row['runs_per_s']:.1f} runs/s, "
                        f"p50 {lat['p50']:.0f} ms, p95 {lat['p95']:.0f} ms, errors "
                        f"{row['errors']}, lost {row['lost_memory_writes']}, cpu {row['cpu_pct']}",
                        flush=True,
                    )
            finally:
                for p in started:
                    await p.stop()
            out[name] = {
                "label": cfg.label,
                "serve_env": cfg.serve_env,
                "apis": cfg.apis,
                "worker_processes": cfg.workers,
                "worker_env": cfg.worker_env,
                "levels": rows,
            }
        for users in levels if floor else ():
            floor_rows[str(users)] = await floor_at(users, "after")
    finally:
        await model.stop()
    model_time_ms = model_delay_s * MODEL_CALLS_PER_RUN * 1000
    goal_ms = GOAL_P95_OVER_MODEL_TIME * model_time_ms
    checks: dict[str, Any] = {
        "no_errors": all(r["errors"] == 0 for c in out.values() for r in c["levels"].values()),
        "no_lost_writes": all(
            r["lost_memory_writes"] == 0 for c in out.values() for r in c["levels"].values()
        ),
    }
    for name, c in out.items():
        row = c["levels"].get(str(GOAL_USERS))
        if row is not None:
            checks[f"p95_at_{GOAL_USERS}_ok/{name}"] = row["latency_ms"]["p95"] <= goal_ms
    floor_goal = floor_rows.get(str(GOAL_USERS))
    if floor_goal is not None:
        checks[f"p95_at_{GOAL_USERS}_ok/floor"] = floor_goal["latency_ms"]["p95"] <= goal_ms
    checks["floor_no_errors"] = all(
        r["errors"] == 0 and r["lost_writes"] == 0
        for r in [*floor_rows.values(), *floor_before.values()]
    )
    return {
        "model_delay_s": model_delay_s,
        "model_time_per_run_ms": model_time_ms,
        "window_s": window_s,
        "levels": list(levels),
        "configs": out,
        # ``levels``: the floor run after the configurations; ``before``: the one before them.
        "floor": {"levels": floor_rows, "before": floor_before},
        "goals": {"p95_ms_at_users": goal_ms, "users": GOAL_USERS},
        "checks": checks,
        "logs": str(env.tmp_root),
    }
