"""B1 — the write path: ``remember_memory`` end to end vs. the floor, LangGraph's store, naive.

Variants, one call each per round, in a new order every round (``round_order``):

* ``ours`` — ``MemoryService.remember_memory`` with a real claimed run, in one unit of work
  (the app's SQLAlchemy session): the gate (advisory lock + ``SELECT … FOR UPDATE`` of the
  run + the switch and the thread's source), per-uid ``flock`` + bounded read, append, the
  version record (gap check, insert, asking message, quota count, retention), then in a second
  worker thread the durable publish (temp + write + fsync + rename + dir fsync), commit;
* ``floor`` — the least work a *versioned, quota-counted, serialized* write needs, timed bare
  with raw psycopg on one open connection (no pool, no ORM) and 3 round trips:
  ``BEGIN; SELECT pg_advisory_xact_lock(…)`` (one simple-protocol round trip) → in one worker
  thread: open the lock file, ``flock``, read MEMORY.md → append → one statement that inserts
  the version row (the same columns ours writes: sha256 of old and new, the whole new content,
  its ``seq`` and ``cum_bytes`` — counted in Python, not read from the newest row) and counts
  the run's quota (``UPDATE agent_runs`` in a CTE) → in a second worker thread: the
  durable publish (temp + write + fsync + rename + dir fsync) → ``COMMIT`` (synchronous) →
  ``flock`` released. It does not check the run's lease, the switch, the version chain or
  retention, and looks up no asking message: those are what ours adds on top;
* ``langgraph_store`` — ``AsyncPostgresStore.aput`` of the same fact as a new item (what a
  LangGraph user would pick), pool of its own on the same database;
* ``naive`` — open, read, append, write back in place: no lock, no fsync (a generic edit tool).

Every round starts from the same ~2 KiB MEMORY.md (reset untimed), and every round appends a
distinct fact, so every call of every variant is a real append of the same size.

Diagnostics (interleaved in the same rounds, reported apart):
``diag_ours_again`` — ours once more, for a second user and run on the same service (an A/A
check: how far two identical variants drift apart in this run; a ratio closer to 1 than that
drift is not a measured difference);
``diag_floor_unversioned`` — the floor before versions existed (the same engine as ours,
``SELECT … FOR UPDATE`` of the run + durable publish, no version row: the old B1 floor);
``diag_ours_async_commit`` — ours on an engine whose sessions run with
``synchronous_commit = off`` (a second user and run), the lever the product does not pull;
``diag_ours_pre_ping`` — ours on an engine with SQLAlchemy's ``pool_pre_ping`` (a third user
and run): ``SELECT 1`` (and the ``BEGIN`` psycopg sends before it) on every checkout, as the
app's engine did before it pinged only connections idle past ``PING_AFTER_IDLE_SECONDS``.

Checks: one more untimed call of ours counts its SQL statements (SQLAlchemy cursor events; the
pool's pre-ping and psycopg's ``BEGIN`` are not statements and not counted), pool checkouts and
worker-thread hops (jobs given to the event loop's thread pool).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import event
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from benchmarks._runner import Op, interleave
from benchmarks.env import APP_PG_OPTIONS, BenchEnv
from benchmarks.fixtures import (
    Identity,
    durable_publish,
    make_claimed_run,
    make_user,
    naive_append,
    realistic_memory,
    restore_memory_quota,
    write_plain,
)
from benchmarks.stats import ratio, summarize
from yuxi.agents.tools.tool_result import tool_outcome
from yuxi.db.engine import ping_idle_connections, sqlalchemy_url
from yuxi.services.memory.service import MemoryService
from yuxi.services.unit_of_work import unit_of_work_factory
from yuxi.workspace.filesystem import MEMORY_PATH

GOAL_OURS_OVER_FLOOR_P50 = 1.5
BASE_BYTES = 2048
VARIANTS = ("ours", "floor", "langgraph_store", "naive")
DIAGNOSTICS = (
    "diag_ours_again",
    "diag_floor_unversioned",
    "diag_ours_async_commit",
    "diag_ours_pre_ping",
)

_FLOOR_RECORD = """
WITH counted AS (
    UPDATE agent_runs
    SET memory_writes = memory_writes + 1, memory_write_bytes = memory_write_bytes + %(added)s
    WHERE id = %(run_id)s
)
INSERT INTO memory_versions (version_id, uid, actor, kind, run_id, thread_id, tool_call_id,
    sha256, size, parent_sha256, content, seq, cum_bytes)
VALUES (%(version_id)s, %(uid)s, 'agent', 'add', %(run_id)s, %(thread_id)s, %(tool_call_id)s,
    %(sha256)s, %(size)s, %(parent_sha256)s, %(content)s, %(seq)s, %(cum_bytes)s)
"""


def fact(r: int) -> str:
    return f"- B1 fact #{r}: prefers build {r % 97} on friday; 第{r}号事实:周五发布。"


def appended(base: str, content: str) -> bytes:
    """The file ``remember_memory`` produces for an add (docs/design.md §5.4)."""
    head = base.rstrip()
    return ((head + "\n\n" + content + "\n") if head else content + "\n").encode("utf-8")


def _flock_and_read(lock_path: Path, path: Path) -> tuple[int, bytes]:
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd, path.read_bytes()
    except BaseException:
        os.close(fd)
        raise


@contextlib.contextmanager
def _counting(engine: Any) -> Iterator[dict[str, Any]]:
    """Statements, pool checkouts and worker-thread hops made inside the block."""
    seen: dict[str, Any] = {"statements": [], "checkouts": 0, "thread_hops": 0}

    def on_statement(*args: Any) -> None:
        seen["statements"].append(" ".join(str(args[2]).split())[:70])

    def on_checkout(*_: Any) -> None:
        seen["checkouts"] += 1

    loop = asyncio.get_running_loop()
    original = loop.run_in_executor

    def counted(executor: Any, func: Callable[..., Any], /, *args: Any) -> Any:
        seen["thread_hops"] += 1
        return original(executor, func, *args)

    event.listen(engine.sync_engine, "before_cursor_execute", on_statement)
    event.listen(engine.sync_engine.pool, "checkout", on_checkout)
    loop.run_in_executor = counted  # type: ignore[method-assign, assignment]
    try:
        yield seen
    finally:
        del loop.run_in_executor  # the class's method again
        event.remove(engine.sync_engine, "before_cursor_execute", on_statement)
        event.remove(engine.sync_engine.pool, "checkout", on_checkout)


async def run_b1(env: BenchEnv, *, rounds: int, warmup: int) -> dict[str, Any]:
    from langgraph.store.postgres.aio import AsyncPostgresStore

    c = env.container
    uid = await make_user(c, name="b1")
    ident = await make_claimed_run(c, uid)
    workspace = c.workspace(uid)
    memory = c.services.memory
    floor_uid = await make_user(c, name="b1-floor")
    floor_ident = await make_claimed_run(c, floor_uid)
    async_uid = await make_user(c, name="b1-async")
    async_ident = await make_claimed_run(c, async_uid)
    ping_uid = await make_user(c, name="b1-ping")
    ping_ident = await make_claimed_run(c, ping_uid)
    again_uid = await make_user(c, name="b1-again")
    again_ident = await make_claimed_run(c, again_uid)
    engines = [
        create_async_engine(
            sqlalchemy_url(env.database_url),
            pool_size=4,
            pool_pre_ping=pre_ping,
            connect_args={"options": f"{APP_PG_OPTIONS} {extra}".strip()},
        )
        for pre_ping, extra in ((False, "-c synchronous_commit=off"), (True, ""))
    ]
    ping_idle_connections(engines[0].sync_engine)  # as the app's engine
    async_memory, ping_memory = (
        MemoryService(
            unit_of_work_factory(async_sessionmaker(engine, expire_on_commit=False)),
            env.data_dir / "workspaces",
            c.workspace,
        )
        for engine in engines
    )
    base_text = realistic_memory(BASE_BYTES, seed=11)
    base = base_text.encode("utf-8")
    bench_dir = env.data_dir / "b1"
    floor_path = bench_dir / "floor" / "MEMORY.md"
    floor_lock = bench_dir / "floor" / ".lock"
    naive_path = bench_dir / "naive" / "MEMORY.md"
    unversioned_path = bench_dir / "unversioned" / "MEMORY.md"
    for path in (floor_path, naive_path, unversioned_path):
        write_plain(path, base)
    failures: dict[str, int] = dict.fromkeys((*VARIANTS, *DIAGNOSTICS), 0)
    floor_begin_lock = (
        "BEGIN; SELECT pg_advisory_xact_lock(hashtextextended("
        f"'user-memory:{floor_uid}', 0))"  # a uid we made: no quoting needed
    )

    async def reset(_: int) -> None:
        await restore_memory_quota(c, [ident, floor_ident, async_ident, ping_ident, again_ident])
        # Through the memory service, so the reset is itself a recorded version and the timed
        # write is the steady state (a file changed behind Yuxi's back would make every timed
        # write record a `recovered` version first).
        await memory.write_memory_file(uid, base, if_match="*")
        await memory.write_memory_file(async_uid, base, if_match="*")
        await memory.write_memory_file(ping_uid, base, if_match="*")
        await memory.write_memory_file(again_uid, base, if_match="*")
        for path in (floor_path, naive_path, unversioned_path):
            await asyncio.to_thread(write_plain, path, base)

    def remembering(name: str, service: MemoryService, identity: Identity) -> Op:
        """``remember_memory`` of round ``r``'s fact through the tool boundary; a result that
        is not ``updated`` counts as a failure of ``name``."""

        async def call(r: int) -> None:
            result, _ = await tool_outcome(lambda: service.remember_memory(identity, fact(r)))
            if result.get("status") != "updated":
                failures[name] += 1

        return call

    ours = remembering("ours", memory, ident)
    diag_ours_again = remembering("diag_ours_again", memory, again_ident)
    diag_ours_async_commit = remembering("diag_ours_async_commit", async_memory, async_ident)
    diag_ours_pre_ping = remembering("diag_ours_pre_ping", ping_memory, ping_ident)

    floor_totals = [0, 0]  # the floor's versions: how many, their bytes

    async def floor(r: int) -> None:
        conn = floor_conn
        await conn.execute(floor_begin_lock.encode())
        try:
            fd, current = await asyncio.to_thread(_flock_and_read, floor_lock, floor_path)
            try:
                data = appended(current.decode("utf-8"), fact(r))
                await conn.execute(
                    _FLOOR_RECORD,
                    {
                        "version_id": "mv_" + uuid.uuid4().hex,
                        "uid": floor_uid,
                        "run_id": floor_ident.run_id,
                        "thread_id": floor_ident.thread_id,
                        "tool_call_id": f"call-{r}",
                        "sha256": hashlib.sha256(data).hexdigest(),
                        "size": len(data),
                        "parent_sha256": hashlib.sha256(current).hexdigest(),
                        "content": data.decode("utf-8"),
                        "added": len(fact(r).encode("utf-8")),
                        # The numbering ours reads from the newest row, kept here for free.
                        "seq": floor_totals[0] + 1,
                        "cum_bytes": floor_totals[1] + len(data),
                    },
                )
                await asyncio.to_thread(durable_publish, floor_path, data)
                await conn.execute("COMMIT")
                floor_totals[0] += 1
                floor_totals[1] += len(data)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
        except BaseException:
            await conn.execute("ROLLBACK")
            raise

    async def naive(r: int) -> None:
        await asyncio.to_thread(naive_append, naive_path, fact(r))

    lock_run = "SELECT id FROM agent_runs WHERE id = :id FOR UPDATE"

    async def diag_floor_unversioned(r: int) -> None:
        from sqlalchemy import text

        data = appended(base_text, fact(r))
        async with c.session_factory() as session, session.begin():
            await session.execute(text(lock_run), {"id": floor_ident.run_id})
            await asyncio.to_thread(durable_publish, unversioned_path, data)

    floor_conn = await psycopg.AsyncConnection.connect(
        env.database_url, autocommit=True, options=APP_PG_OPTIONS
    )
    try:
        async with AsyncPostgresStore.from_conn_string(
            env.database_url, pool_config={"min_size": 1, "max_size": 4}
        ) as store:
            await store.setup()
            namespace = ("memories", uid)

            async def langgraph_store(r: int) -> None:
                await store.aput(namespace, f"fact-{r}", {"content": fact(r)}, index=False)

            ops = {
                "ours": ours,
                "floor": floor,
                "langgraph_store": langgraph_store,
                "naive": naive,
                "diag_ours_again": diag_ours_again,
                "diag_floor_unversioned": diag_floor_unversioned,
                "diag_ours_async_commit": diag_ours_async_commit,
                "diag_ours_pre_ping": diag_ours_pre_ping,
            }
            run = await interleave(ops, rounds=rounds, warmup=warmup, before_round=reset)
            store_items = len(await store.asearch(namespace, limit=rounds + warmup + 10))
        last = warmup + run.rounds - 1
        # Sanity: the floor wrote exactly the bytes ours wrote in the last round.
        ours_bytes = await workspace.read_file(MEMORY_PATH, 1 << 20)
        same_bytes = ours_bytes == appended(base_text, fact(last)) == floor_path.read_bytes()
        await reset(0)
        with _counting(c.engine) as per_call:
            await ours(last + 1)
    finally:
        await floor_conn.close()
        for engine in engines:
            await engine.dispose()

    stats = {name: summarize(samples) for name, samples in run.samples_ms.items()}
    # Where the time goes, side by side: CPU of this process per call (the server's is not
    # counted). On a 2-core machine the event loop's CPU is what a write cannot overlap.
    cpu = {
        name: {
            "loop_p50": summarize(run.loop_cpu_ms[name])["p50"],
            "process_p50": summarize(run.process_cpu_ms[name])["p50"],
        }
        for name in ("ours", "floor")
    }
    ratios = {
        "ours/floor": ratio(stats["ours"], stats["floor"]),
        "ours/langgraph_store": ratio(stats["ours"], stats["langgraph_store"]),
        "ours/naive": ratio(stats["ours"], stats["naive"]),
        "langgraph_store/floor": ratio(stats["langgraph_store"], stats["floor"]),
        "naive/floor": ratio(stats["naive"], stats["floor"]),
    }
    diagnostics = {
        "diag_ours_again/ours": ratio(stats["diag_ours_again"], stats["ours"]),
        "ours/diag_floor_unversioned": ratio(stats["ours"], stats["diag_floor_unversioned"]),
        "floor/diag_floor_unversioned": ratio(stats["floor"], stats["diag_floor_unversioned"]),
        "diag_ours_async_commit/ours": ratio(stats["diag_ours_async_commit"], stats["ours"]),
        "diag_ours_async_commit/langgraph_store": ratio(
            stats["diag_ours_async_commit"], stats["langgraph_store"]
        ),
        "diag_ours_pre_ping/ours": ratio(stats["diag_ours_pre_ping"], stats["ours"]),
        "diag_ours_pre_ping/floor": ratio(stats["diag_ours_pre_ping"], stats["floor"]),
    }
    p50 = ratios["ours/floor"]["p50"]
    return {
        "rounds": run.rounds,
        "warmup_rounds": warmup,
        "base_bytes": len(base),
        "appended_bytes": len(appended(base_text, fact(last))) - len(base),
        "stats_ms": stats,
        "ratios": ratios,
        "cpu_ms": cpu,
        "diagnostic_ratios": diagnostics,
        "goal": {
            "metric": "ours/floor at p50",
            "target": GOAL_OURS_OVER_FLOOR_P50,
            "value": p50,
            "met": bool(p50 <= GOAL_OURS_OVER_FLOOR_P50),
        },
        "failures": failures,
        "checks": {
            "floor_bytes_equal_ours": same_bytes,
            "store_items_written": store_items,
            "ours_statements_per_call": len(per_call["statements"]),
            "ours_statements": per_call["statements"],
            "ours_pool_checkouts_per_call": per_call["checkouts"],
            "ours_thread_hops_per_call": per_call["thread_hops"],
            "floor_round_trips_per_call": 3,
            "floor_thread_hops_per_call": 2,
        },
        "samples_ms": {k: [round(v, 4) for v in vs] for k, vs in run.samples_ms.items()},
        "wall_s": run.wall_s,
        "paths": {"floor": str(Path(floor_path)), "naive": str(Path(naive_path))},
    }
