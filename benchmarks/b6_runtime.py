"""B6 — run overhead and idle cost of the runtime, against its floor, side by side in one run.

A real ``yuxi serve`` process (two in-process workers, the offline model: it answers at once,
so everything timed is platform overhead) on the bench database.

**Overhead.** Each round, interleaved in a new order (round_order):

* ``ours`` — ``POST /threads/{id}/runs`` then follow ``GET /runs/{id}/events`` (SSE): the time to
  the first ``token`` event and to the ``completed`` status event;
* ``ours_wait`` — ``POST …/runs?wait=true`` until it answers with the completed run;
* ``floor`` — the same run's own database work, timed bare with raw psycopg on one connection:
  the rows a real run of this round wrote (read back from a template run), written with the
  same transactions — submit (run, user message, pending event), claim, each event in its own
  transaction (a ``message`` event with its message row), each checkpoint and each checkpoint
  write batch, the finish (final event + run row) — then one read of the events as a stream
  would. Its first token is after submit, claim and the events up to the first token (no
  checkpoint: the floor is generous to the platform's opponent).

**Idle cost.** Database transactions per second with nobody working — ``xact_commit +
xact_rollback`` of the bench database in ``pg_stat_database``, sampled over a window, minus
the sampler's own — with 0, 100 and 1,000 open event streams (one asyncio client holds them, on
runs held ``running`` under a long lease so the streams stay open). A window in which
autovacuum worked on the database is measured again (``_idle_tps``).

Goals: ``ours/floor`` ≤ 2 at p50; idle ≤ 2 transactions/s whatever the number of streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg.types.json import Jsonb

from benchmarks.env import BenchEnv
from benchmarks.fixtures import LONG_LEASE_SECONDS
from benchmarks.stats import ratio, round_order, summarize
from yuxi.services.runs.service import RunService

VARIANTS = ("ours", "ours_wait", "floor")
STREAM_LEVELS = (0, 100, 1000)
#: Runs the open streams follow (spread over this many users, one token each).
HELD_RUNS = 20
HELD_USERS = 5
#: Before an idle window: a backend reports its transactions to pg_stat_database up to ~10 s
#: late when it goes quiet, and a burst of work leaves autovacuum something to do.
SETTLE_SECONDS = 12.0
GOAL_RATIO_P50 = 2.0
GOAL_IDLE_TPS = 2.0

_XACTS = (
    "SELECT xact_commit + xact_rollback, now() FROM pg_stat_database"
    " WHERE datname = current_database()"
)
#: Autovacuum's work on this database between two moments of its clock: the tables it finished
#: vacuuming or analyzing, and whether a worker of it is busy here now.
_AUTOVACUUM = """
SELECT (SELECT count(*) FROM pg_stat_all_tables
        WHERE last_autovacuum BETWEEN %(t0)s AND %(t1)s
           OR last_autoanalyze BETWEEN %(t0)s AND %(t1)s),
       (SELECT count(*) FROM pg_stat_activity
        WHERE backend_type = 'autovacuum worker' AND datname = current_database())
"""
#: Idle windows measured at most, until one in which autovacuum did nothing here.
IDLE_TRIES = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Server:
    """``yuxi serve`` as a subprocess on the bench database."""

    def __init__(self, env: BenchEnv) -> None:
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log = env.tmp_root / "b6-server.log"
        self._env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("YUXI_")},
            "YUXI_DATABASE_URL": env.database_url,
            "YUXI_DATA_DIR": str(env.container.settings.data_dir),
            "YUXI_HOST": "127.0.0.1",
            "YUXI_PORT": str(self.port),
            "YUXI_WORKERS": "2",
        }
        self.proc: subprocess.Popen[bytes] | None = None

    async def __aenter__(self) -> _Server:
        def spawn() -> subprocess.Popen[bytes]:
            with self.log.open("wb") as out:
                return subprocess.Popen(
                    [sys.executable, "-m", "yuxi.cli", "serve"],
                    env=self._env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )

        self.proc = await asyncio.to_thread(spawn)
        deadline = time.monotonic() + 120
        async with httpx.AsyncClient() as client:
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"yuxi serve exited:\n{self.log.read_text()[-3000:]}")
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(self.base_url + "/healthz", timeout=1)).status_code == 200:
                        return self
                if time.monotonic() > deadline:
                    raise RuntimeError("yuxi serve did not start")
                await asyncio.sleep(0.2)

    async def __aexit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                await asyncio.to_thread(self.proc.wait, 30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


async def _sse(client: httpx.AsyncClient, run_id: str) -> tuple[float | None, float]:
    """Follow a run's events to its settled status: (first token, settled) perf_counter times."""
    first: float | None = None
    headers = {"Accept": "text/event-stream"}
    async with client.stream("GET", f"/api/v1/runs/{run_id}/events", headers=headers) as resp:
        resp.raise_for_status()
        async for line in resp.aiter_lines():
            if not line.startswith("data:"):
                continue
            event = json.loads(line[5:])
            if event["type"] == "token" and first is None:
                first = time.perf_counter()
            if event["type"] == "run_status" and event["data"]["status"] in (
                "completed",
                "failed",
                "cancelled",
                "interrupted",
            ):
                if event["data"]["status"] != "completed":
                    raise RuntimeError(f"run {run_id} ended {event['data']}")
                return first, time.perf_counter()
    raise RuntimeError(f"the stream of run {run_id} ended early")


async def _thread(client: httpx.AsyncClient) -> str:
    resp = await client.post("/api/v1/threads", json={})
    resp.raise_for_status()
    return str(resp.json()["thread_id"])


# -- the floor: a template run's rows, rewritten bare -------------------------------------------


async def _template(conn: psycopg.AsyncConnection[Any], run_id: str) -> dict[str, Any]:
    run = await (
        await conn.execute(
            "SELECT conversation_thread_id, uid FROM agent_runs WHERE id = %s", (run_id,)
        )
    ).fetchone()
    assert run is not None
    thread, uid = run
    events = await (
        await conn.execute(
            "SELECT event_type, data FROM run_events WHERE run_id = %s ORDER BY seq", (run_id,)
        )
    ).fetchall()
    checkpoints = [
        r[0]
        for r in await (
            await conn.execute(
                "SELECT checkpoint_id FROM checkpoints WHERE thread_id = %s ORDER BY checkpoint_id",
                (thread,),
            )
        ).fetchall()
    ]
    writes = await (
        await conn.execute(
            "SELECT DISTINCT checkpoint_id, task_id FROM checkpoint_writes WHERE thread_id = %s",
            (thread,),
        )
    ).fetchall()
    await conn.commit()
    return {
        "thread": thread,
        "uid": uid,
        "events": [(t, d) for t, d in events],
        "checkpoints": checkpoints,
        "writes": [(c, t) for c, t in writes],
    }


async def _floor_run(
    conn: psycopg.AsyncConnection[Any], tpl: dict[str, Any], conv_id: int, thread: str
) -> tuple[float, float]:
    """One bare run; (first token, done) perf_counter times."""
    run_id = str(uuid.uuid4())
    uid, events = tpl["uid"], tpl["events"]

    async def event(seq: int, kind: str, data: Any) -> None:
        await conn.execute(
            "INSERT INTO run_events (run_id, seq, event_type, data) VALUES (%s, %s, %s, %s)",
            (run_id, seq, kind, Jsonb(data)),
        )

    # A type no worker claims (the server's workers are running): the same row otherwise.
    await conn.execute(
        "INSERT INTO agent_runs (id, uid, conversation_thread_id, request_id, run_type, status,"
        " input_payload) VALUES (%s, %s, %s, %s, 'subagent', 'pending', %s)",
        (run_id, uid, thread, run_id, Jsonb({"input": "hello"})),
    )
    await conn.execute(
        "INSERT INTO messages (conversation_id, uid, role, content, run_id)"
        " VALUES (%s, %s, 'user', 'hello', %s)",
        (conv_id, uid, run_id),
    )
    await event(1, *events[0])
    await conn.commit()
    await conn.execute(
        "UPDATE agent_runs SET status = 'running', worker_id = %s, attempt = attempt + 1,"
        " heartbeat_at = now(), lease_expires_at = now() + interval '30 seconds',"
        " started_at = now() WHERE id = (SELECT id FROM agent_runs WHERE id = %s"
        " AND status = 'pending' FOR UPDATE SKIP LOCKED)",
        ("w_floor", run_id),
    )
    await conn.commit()
    first = 0.0
    for seq, (kind, data) in enumerate(events[1:-1], start=2):
        if kind == "message":
            await conn.execute(
                "INSERT INTO messages (conversation_id, uid, role, content, run_id)"
                " VALUES (%s, %s, 'assistant', %s, %s)",
                (conv_id, uid, data.get("content", ""), run_id),
            )
        await event(seq, kind, data)
        await conn.commit()
        if kind == "token" and not first:
            await (await conn.execute(_READ_EVENTS, (run_id,))).fetchall()
            await conn.commit()
            first = time.perf_counter()
    src, dst = tpl["thread"], f"floor-{run_id}"  # every round its own checkpoint thread
    for checkpoint in tpl["checkpoints"]:
        await conn.execute(_COPY_CHECKPOINT, (dst, src, checkpoint))
        await conn.commit()
    await conn.execute(_COPY_BLOBS, (dst, src))
    await conn.commit()
    for checkpoint, task in tpl["writes"]:
        await conn.execute(_COPY_WRITES, (dst, src, checkpoint, task))
        await conn.commit()
    await event(len(events), *events[-1])
    await conn.execute(
        "UPDATE agent_runs SET status = 'completed', finished_at = now() WHERE id = %s"
        " AND worker_id = 'w_floor' AND lease_expires_at > now()",
        (run_id,),
    )
    await conn.commit()
    await (await conn.execute(_READ_EVENTS, (run_id,))).fetchall()
    await conn.commit()
    end = time.perf_counter()
    return first or end, end


_READ_EVENTS = "SELECT seq, event_type, data FROM run_events WHERE run_id = %s AND seq > 0"
_COPY_CHECKPOINT = (
    "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,"
    " type, checkpoint, metadata) SELECT %s, checkpoint_ns, checkpoint_id, parent_checkpoint_id,"
    " type, checkpoint, metadata FROM checkpoints WHERE thread_id = %s AND checkpoint_id = %s"
)
_COPY_BLOBS = (
    "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)"
    " SELECT %s, checkpoint_ns, channel, version, type, blob FROM checkpoint_blobs"
    " WHERE thread_id = %s"
)
_COPY_WRITES = (
    "INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx,"
    " channel, type, blob) SELECT %s, checkpoint_ns, checkpoint_id, task_id, idx, channel, type,"
    " blob FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_id = %s AND task_id = %s"
)


_PHASES = """
SELECT extract(epoch FROM r.started_at - r.created_at) * 1000,
       extract(epoch FROM (SELECT min(e.created_at) FROM run_events e
                           WHERE e.run_id = r.id AND e.event_type = 'token') - r.started_at) * 1000,
       extract(epoch FROM r.finished_at - r.started_at) * 1000
FROM agent_runs r WHERE r.id = ANY(%s)
"""


async def _phases(conn: psycopg.AsyncConnection[Any], run_ids: list[str]) -> dict[str, Any]:
    """Where the ``ours`` runs spent their time, by the database's clock (transaction start
    times): submit → claim (the wake-up), claim → first token event, claim → finished."""
    rows = await (await conn.execute(_PHASES, (run_ids,))).fetchall()
    await conn.commit()
    names = ("submit_to_claim", "claim_to_first_token", "claim_to_finished")
    return {
        name: summarize([float(row[i]) for row in rows if row[i] is not None])
        for i, name in enumerate(names)
    }


# -- idle cost ----------------------------------------------------------------------------------


async def _idle_tps(url: str, seconds: float, settle: float) -> dict[str, float]:
    """Transactions/s on the database over ``seconds``, the sampler's own one taken out.

    A window in which autovacuum finished a table here, or was at work here as it ended, is
    measured again (after another ``settle``), up to :data:`IDLE_TRIES` windows: its
    transactions are PostgreSQL's upkeep, not the server's idle cost — on a fresh database its
    first pass, a transaction per table, comes about a minute in, whichever window that is. The
    windows measured and autovacuum's tables in the last one are reported with the figure."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        windows = 0
        while windows < IDLE_TRIES:
            windows += 1
            await asyncio.sleep(settle)  # earlier work and its statistics settle
            before, t0 = (await (await conn.execute(_XACTS)).fetchone()) or (0, None)
            started = time.perf_counter()
            await asyncio.sleep(seconds)
            after, t1 = (await (await conn.execute(_XACTS)).fetchone()) or (0, None)
            window = time.perf_counter() - started
            # Read after the window closed: not among its transactions.
            tables, busy = (
                await (await conn.execute(_AUTOVACUUM, {"t0": t0, "t1": t1})).fetchone()
            ) or (0, 0)
            if not (tables or busy):
                break
    xacts = max(0, int(after) - int(before) - 1)  # the first sample is a transaction too
    return {
        "transactions": xacts,
        "window_s": window,
        "per_s": xacts / window,
        "windows": windows,
        "autovacuum_tables": int(tables) + int(busy),
    }


async def _hold_runs(env: BenchEnv) -> list[tuple[str, str]]:
    """(token, run id) of runs held ``running`` under a long lease by nobody: their streams
    stay open. Made before the server starts, so its workers never see them pending."""
    c = env.container
    runs = RunService(c.uow, lease_seconds=LONG_LEASE_SECONDS)
    held: list[tuple[str, str]] = []
    for u in range(HELD_USERS):
        issued = await c.services.users.create_user(f"b6-hold-{u}-{uuid.uuid4().hex[:6]}")
        for _ in range(HELD_RUNS // HELD_USERS):
            thread = await c.services.chat.create_thread(issued.uid)
            run, _ = await c.services.chat.submit(issued.uid, thread.thread_id, "held")
            assert await runs.claim(run.id) is not None
            held.append((issued.token, run.id))
    return held


async def _open_streams(
    base_url: str, held: list[tuple[str, str]], count: int
) -> tuple[list[httpx.AsyncClient], list[asyncio.Task[None]]]:
    """``count`` open event streams over the held runs, each past its first event."""
    clients = {
        token: httpx.AsyncClient(
            base_url=base_url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(60.0, read=None),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
        )
        for token in {t for t, _ in held}
    }
    tasks: list[asyncio.Task[None]] = []

    async def hold(client: httpx.AsyncClient, run_id: str, opened: asyncio.Event) -> None:
        headers = {"Accept": "text/event-stream"}
        async with client.stream("GET", f"/api/v1/runs/{run_id}/events", headers=headers) as r:
            async for line in r.aiter_lines():
                if line.startswith("data:"):
                    opened.set()

    for start in range(0, count, 100):
        batch = []
        for i in range(start, min(count, start + 100)):
            token, run_id = held[i % len(held)]
            opened = asyncio.Event()
            tasks.append(asyncio.create_task(hold(clients[token], run_id, opened)))
            batch.append(opened.wait())
        await asyncio.wait_for(asyncio.gather(*batch), 120)
    if any(t.done() for t in tasks):
        raise RuntimeError("an event stream ended while it should stay open")
    return list(clients.values()), tasks


async def _close_streams(clients: list[httpx.AsyncClient], tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for client in clients:
        await client.aclose()


# -- the benchmark ------------------------------------------------------------------------------


async def run_b6(
    env: BenchEnv,
    *,
    rounds: int,
    warmup: int,
    idle_seconds: float,
    stream_levels: tuple[int, ...] = STREAM_LEVELS,
    settle_seconds: float = SETTLE_SECONDS,
) -> dict[str, Any]:
    c = env.container
    held = await _hold_runs(env)
    issued = await c.services.users.create_user(f"b6-{uuid.uuid4().hex[:8]}")
    samples: dict[str, list[float]] = {f"{v}_{k}": [] for v in VARIANTS for k in ("first", "done")}
    ours_runs: list[str] = []
    async with (
        _Server(env) as server,
        httpx.AsyncClient(
            base_url=server.base_url,
            headers={"Authorization": f"Bearer {issued.token}"},
            timeout=httpx.Timeout(120.0),
        ) as client,
        await psycopg.AsyncConnection.connect(env.database_url) as conn,
    ):
        # A template run: what one real run writes, for the floor to write bare.
        thread = await _thread(client)
        done = await client.post(
            f"/api/v1/threads/{thread}/runs?wait=true", json={"input": "hello"}
        )
        assert done.json()["status"] == "completed", done.text
        tpl = await _template(conn, done.json()["run_id"])
        floor_thread = await c.services.chat.create_thread(tpl["uid"])
        conv = await (
            await conn.execute(
                "SELECT id FROM conversations WHERE thread_id = %s", (floor_thread.thread_id,)
            )
        ).fetchone()
        await conn.commit()
        assert conv is not None

        for r in range(warmup + rounds):
            for name in round_order(list(VARIANTS), r):
                if name == "floor":
                    # the floor's runs are settled at once: one thread serves every round
                    t0 = time.perf_counter()
                    first, end = await _floor_run(conn, tpl, conv[0], floor_thread.thread_id)
                elif name == "ours":
                    thread = await _thread(client)
                    t0 = time.perf_counter()
                    resp = await client.post(
                        f"/api/v1/threads/{thread}/runs", json={"input": "hello"}
                    )
                    resp.raise_for_status()
                    token_at, end = await _sse(client, resp.json()["run_id"])
                    first = token_at or end
                    if r >= warmup:
                        ours_runs.append(resp.json()["run_id"])
                else:
                    thread = await _thread(client)
                    t0 = time.perf_counter()
                    resp = await client.post(
                        f"/api/v1/threads/{thread}/runs?wait=true", json={"input": "hello"}
                    )
                    end = first = time.perf_counter()
                    if resp.json()["status"] != "completed":
                        raise RuntimeError(f"?wait=true answered {resp.text}")
                if r >= warmup:
                    samples[f"{name}_first"].append((first - t0) * 1000)
                    samples[f"{name}_done"].append((end - t0) * 1000)

        phases = await _phases(conn, ours_runs)
        idle: dict[str, Any] = {}
        for count in stream_levels:
            clients, tasks = await _open_streams(server.base_url, held, count)
            try:
                idle[str(count)] = await _idle_tps(env.database_url, idle_seconds, settle_seconds)
            finally:
                await _close_streams(clients, tasks)

    del samples["ours_wait_first"]  # ?wait=true answers once, at the end
    stats = {name: summarize(values) for name, values in samples.items()}
    ratios = {
        "first_token ours/floor": ratio(stats["ours_first"], stats["floor_first"]),
        "completed ours/floor": ratio(stats["ours_done"], stats["floor_done"]),
        "completed ours_wait/floor": ratio(stats["ours_wait_done"], stats["floor_done"]),
    }
    shape = {
        "events": len(tpl["events"]),
        "token_events": sum(1 for t, _ in tpl["events"] if t == "token"),
        "checkpoints": len(tpl["checkpoints"]),
        "checkpoint_write_batches": len(tpl["writes"]),
    }
    return {
        "rounds": rounds,
        "warmup": warmup,
        "run_shape": shape,
        "stats_ms": stats,
        "ratios": ratios,
        "phases_ms": phases,
        "idle": idle,
        "idle_window_s": idle_seconds,
        "goals": {"ratio_p50": GOAL_RATIO_P50, "idle_tps": GOAL_IDLE_TPS},
        "checks": {
            "first_token_ratio_ok": ratios["first_token ours/floor"]["p50"] <= GOAL_RATIO_P50,
            "completed_ratio_ok": ratios["completed ours/floor"]["p50"] <= GOAL_RATIO_P50,
            "idle_ok": all(v["per_s"] <= GOAL_IDLE_TPS for v in idle.values()),
        },
        "server_log": str(Path(env.tmp_root) / "b6-server.log"),
    }
