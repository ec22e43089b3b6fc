"""B1 — the write path: ``remember_memory`` end to end vs. the floor, LangGraph's store, naive.

Variants, one call each per round, order rotated every round:

* ``ours`` — ``MemoryService.remember_memory`` with a real claimed run: authorization
  transaction (advisory lock + ``SELECT … FOR UPDATE`` of the run + switch re-read), per-uid
  ``flock``, bounded read, append, atomic durable publish, commit;
* ``floor`` — the same bytes published with a bare temp + write + fsync + rename + dir fsync
  inside one PostgreSQL transaction holding ``SELECT … FOR UPDATE`` on the same run row, on the
  same engine: the least any safe implementation must do;
* ``langgraph_store`` — ``AsyncPostgresStore.aput`` of the same fact as a new item (what a
  LangGraph user would pick), pool of its own on the same database;
* ``naive`` — open, read, append, write back in place: no lock, no fsync (a generic edit tool).

Every round starts from the same ~2 KiB MEMORY.md (reset untimed), and every round appends a
distinct fact, so every call of every variant is a real append of the same size.

Diagnostics (interleaved in the same rounds, reported apart) split both sides in two:
``diag_ours_sql`` — ours' transaction alone (advisory lock + run check + switch re-read +
commit, the real repository calls); ``diag_ours_file`` — ours' file part alone (per-uid
``flock`` + bounded read + ``replace_authorized_file``, on a second user's workspace);
``diag_floor_sql`` / ``diag_floor_file`` — the floor's two halves.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from sqlalchemy import text

from yuxi.agents.tools.tool_result import tool_outcome
from yuxi.repositories.agent_run_repository import AgentRunRepository
from yuxi.repositories.user_repository import UserRepository
from yuxi.workspace.filesystem import MEMORY_PATH

from ._env import BenchEnv
from ._fixtures import (
    durable_publish,
    make_claimed_run,
    make_user,
    naive_append,
    realistic_memory,
    restore_memory_quota,
    write_plain,
)
from ._runner import interleave
from ._stats import ratio, summarize

GOAL_OURS_OVER_FLOOR_P50 = 1.3
BASE_BYTES = 2048
VARIANTS = ("ours", "floor", "langgraph_store", "naive")
DIAGNOSTICS = ("diag_ours_sql", "diag_ours_file", "diag_floor_sql", "diag_floor_file")


def fact(r: int) -> str:
    return f"- B1 fact #{r}: prefers build {r % 97} on friday; 第{r}号事实:周五发布。"


def appended(base: str, content: str) -> bytes:
    """The file ``remember_memory`` produces for an add (DESIGN.md §4)."""
    head = base.rstrip()
    return ((head + "\n\n" + content + "\n") if head else content + "\n").encode("utf-8")


async def run_b1(env: BenchEnv, *, rounds: int, warmup: int) -> dict[str, Any]:
    from langgraph.store.postgres.aio import AsyncPostgresStore

    c = env.container
    uid = await make_user(c, name="b1")
    ident = await make_claimed_run(c, uid)
    workspace = c.workspace(uid)
    diag_uid = await make_user(c, name="b1-diag")
    diag_ws = c.workspace(diag_uid)
    memory = c.services.memory
    base_text = realistic_memory(BASE_BYTES, seed=11)
    base = base_text.encode("utf-8")
    bench_dir = env.data_dir / "b1"
    floor_path = bench_dir / "floor" / "MEMORY.md"
    naive_path = bench_dir / "naive" / "MEMORY.md"
    for path in (floor_path, naive_path):
        write_plain(path, base)
    diag_floor_path = bench_dir / "diag-floor" / "MEMORY.md"
    write_plain(diag_floor_path, base)
    failures: dict[str, int] = dict.fromkeys(VARIANTS, 0)
    lock_sql = text("SELECT id FROM agent_runs WHERE id = :id FOR UPDATE")

    async def reset(_: int) -> None:
        await restore_memory_quota(c, [ident])
        # Through the memory service, so the reset is itself a recorded version and the timed
        # write is the steady state (a file changed behind Yuxi's back would make every timed
        # write record a `recovered` version first).
        await memory.write_memory_file(uid, base, if_match="*")
        await asyncio.to_thread(write_plain, floor_path, base)
        await asyncio.to_thread(write_plain, naive_path, base)
        await diag_ws.replace_authorized_file(MEMORY_PATH, base)

    async def ours(r: int) -> None:
        result, _ = await tool_outcome(lambda: memory.remember_memory(ident, fact(r)))
        if result.get("status") != "updated":
            failures["ours"] += 1

    async def floor(r: int) -> None:
        data = appended(base_text, fact(r))
        async with c.session_factory() as session, session.begin():
            await session.execute(lock_sql, {"id": ident.run_id})
            await asyncio.to_thread(durable_publish, floor_path, data)

    async def naive(r: int) -> None:
        await asyncio.to_thread(naive_append, naive_path, fact(r))

    async def diag_ours_sql(_: int) -> None:
        async with c.session_factory() as session, session.begin():
            auth = await AgentRunRepository(session).lock_memory_write(ident)
            assert auth.ok, auth.reason
            assert await UserRepository(session).memory_enabled(uid)

    async def diag_ours_file(r: int) -> None:
        async with diag_ws.locked():
            data, _ = await diag_ws.read_authorized_file_prefix(MEMORY_PATH, 128 * 1024)
            new = appended(data.decode("utf-8"), fact(r))
            await diag_ws.replace_authorized_file(MEMORY_PATH, new)

    async def diag_floor_sql(_: int) -> None:
        async with c.session_factory() as session, session.begin():
            await session.execute(lock_sql, {"id": ident.run_id})

    async def diag_floor_file(r: int) -> None:
        await asyncio.to_thread(durable_publish, diag_floor_path, appended(base_text, fact(r)))

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
            "diag_ours_sql": diag_ours_sql,
            "diag_ours_file": diag_ours_file,
            "diag_floor_sql": diag_floor_sql,
            "diag_floor_file": diag_floor_file,
        }
        run = await interleave(ops, rounds=rounds, warmup=warmup, before_round=reset)
        store_items = len(await store.asearch(namespace, limit=rounds + warmup + 10))

    # Sanity: the floor wrote exactly the bytes ours wrote in the last round.
    last = warmup + run.rounds - 1
    ours_bytes = await workspace.read_file(MEMORY_PATH, 1 << 20)
    same_bytes = ours_bytes == appended(base_text, fact(last)) == floor_path.read_bytes()
    stats = {name: summarize(samples) for name, samples in run.samples_ms.items()}
    ratios = {
        "ours/floor": ratio(stats["ours"], stats["floor"]),
        "ours/langgraph_store": ratio(stats["ours"], stats["langgraph_store"]),
        "ours/naive": ratio(stats["ours"], stats["naive"]),
        "langgraph_store/floor": ratio(stats["langgraph_store"], stats["floor"]),
        "naive/floor": ratio(stats["naive"], stats["floor"]),
    }
    diagnostics = {
        "diag_ours_sql/diag_floor_sql": ratio(stats["diag_ours_sql"], stats["diag_floor_sql"]),
        "diag_ours_file/diag_floor_file": ratio(stats["diag_ours_file"], stats["diag_floor_file"]),
    }
    p50 = ratios["ours/floor"]["p50"]
    return {
        "rounds": run.rounds,
        "warmup_rounds": warmup,
        "base_bytes": len(base),
        "appended_bytes": len(appended(base_text, fact(last))) - len(base),
        "stats_ms": stats,
        "ratios": ratios,
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
        },
        "samples_ms": {k: [round(v, 4) for v in vs] for k, vs in run.samples_ms.items()},
        "wall_s": run.wall_s,
        "paths": {"floor": str(Path(floor_path)), "naive": str(Path(naive_path))},
    }
