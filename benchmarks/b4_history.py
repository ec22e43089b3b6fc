"""B4 — history at scale: search and read for a heavy user as the table grows.

The database is grown in stages by :class:`~benchmarks.datagen.HistoryGenerator` (COPY): at
each stage the heavy user owns 10 % of all messages (1k of 10k, 10k of 100k, 100k of 1M), the
rest is spread over the other users. At each stage, in up to two phases:

* ``no_index`` — the schema as migrated by 0001 (the ``(uid, id DESC)`` btree and friends);
* ``trgm`` — plus ``ix_messages_content_trgm`` (GIN ``gin_trgm_ops`` on ``content``), only where
  the server has ``pg_trgm``; the build time and size are reported.

and, interleaved round-robin inside a phase, two engines:

* ``shipped`` — the app's own engine (``bootstrap``), i.e. what production runs: psycopg prepares
  a statement server-side after 5 executions and PostgreSQL may then switch to a *generic* plan;
* ``custom_plan`` — the same code on an engine with ``plan_cache_mode=force_custom_plan``, so
  every execution is planned for its actual values (a candidate fix).

Query kinds (all through ``LookbackService``, i.e. the whole tool path): search hit for a common
word (English / 2-character Chinese), search for a rare needle only in the heavy user's three
oldest messages (a hit that needs a deep scan), search miss (English / 2-character Chinese),
read of the latest window and of a window anchored in the middle of a long thread.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import psycopg
from sqlalchemy.dialects import postgresql

from yuxi.agents.tools.tool_result import tool_outcome
from yuxi.repositories._history_queries import search_statement
from yuxi.services.lookback_service import LookbackService

from ._env import BenchEnv
from ._runner import Op, interleave
from ._stats import ratio, summarize
from .datagen import TERMS, HistoryGenerator

TRGM_INDEX = "ix_messages_content_trgm"
HEAVY_SHARE = 10  # heavy user = 1/10 of all messages
GOAL_P95_MS = 50.0
SEARCH_KINDS = {
    "search_hit_en": TERMS["common_en"],
    "search_hit_cjk2": TERMS["common_cjk"],
    "search_rare_en": TERMS["rare_en"],
    "search_rare_cjk": TERMS["rare_cjk"],
    "search_miss_en": TERMS["miss_en"],
    "search_miss_cjk2": TERMS["miss_cjk"],
}
READ_KINDS = ("read_latest", "read_anchored")
KINDS = (*SEARCH_KINDS, *READ_KINDS)
VARIANTS = ("shipped", "custom_plan")

SCALES: dict[str, tuple[int, ...]] = {
    "quick": (10_000, 100_000),
    "full": (10_000, 100_000, 1_000_000),
}


def parse_scale(value: str) -> tuple[int, ...]:
    if value in SCALES:
        return SCALES[value]
    totals = tuple(sorted(int(part.replace("_", "")) for part in value.split(",") if part))
    if not totals or totals[0] < 100:
        raise ValueError("--scale: quick, full, or comma-separated totals >= 100")
    return totals


# -- pg_trgm ------------------------------------------------------------------------------


def trgm_schema(conn: psycopg.Connection[Any]) -> str | None:
    """Schema of an installed pg_trgm, installing it when available; ``None`` if impossible."""
    row = conn.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'pg_trgm'"
    ).fetchone()
    if row:
        return str(row[0])
    if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'").fetchone():
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        except psycopg.Error:
            return None
        return trgm_schema(conn)
    return None


def create_trgm_index(conn: psycopg.Connection[Any], schema: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {TRGM_INDEX} "
        f'ON messages USING gin (content "{schema}".gin_trgm_ops)'
    )
    build_s = time.perf_counter() - t0
    conn.execute("ANALYZE messages")
    size = conn.execute("SELECT pg_relation_size(%s::regclass)", (TRGM_INDEX,)).fetchone()
    table = conn.execute("SELECT pg_relation_size('messages'::regclass)").fetchone()
    return {
        "build_s": build_s,
        "index_bytes": int(size[0]) if size else None,
        "table_bytes": int(table[0]) if table else None,
    }


def drop_trgm_index(conn: psycopg.Connection[Any]) -> None:
    conn.execute(f"DROP INDEX IF EXISTS {TRGM_INDEX}")


# -- plans --------------------------------------------------------------------------------


def _scan_nodes(plan: dict[str, Any]) -> list[str]:
    """The search's access paths of ``messages`` in an EXPLAIN JSON plan, with loop counts.

    ``Index Scan Backward pk_messages x1``, ``Bitmap[ix_a & ix_b] x893``, ``Seq Scan x3``…
    The outer primary-key lookup of the <= 5 hits (alias ``messages``) is left out.
    """
    found: list[str] = []

    def bitmap_indexes(node: dict[str, Any]) -> list[str]:
        if node.get("Node Type") == "Bitmap Index Scan":
            return [str(node.get("Index Name"))]
        return [name for child in node.get("Plans", []) for name in bitmap_indexes(child)]

    def walk(node: dict[str, Any]) -> None:
        ntype = str(node.get("Node Type", ""))
        loops = node.get("Actual Loops")
        times = f" x{loops}" if loops is not None else ""
        if node.get("Relation Name") == "messages" and node.get("Alias") != "messages":
            if ntype == "Bitmap Heap Scan":
                found.append(f"Bitmap[{' & '.join(bitmap_indexes(node))}]{times}")
                return
            label = ntype + (" Backward" if node.get("Scan Direction") == "Backward" else "")
            if node.get("Index Name"):
                label += f" {node['Index Name']}"
            found.append(label + times)
        for child in node.get("Plans", []):
            walk(child)

    walk(plan)
    return found


def explain_search(url: str, uid: str, query: str) -> dict[str, Any]:
    """Messages' access paths in the custom and the generic plan of the real search SQL."""
    stmt = search_statement(uid, query, 5)
    compiled = stmt.compile(
        # SQLAlchemy's psycopg dialect declares an unannotated ``__init__(self, **kwargs)``.
        dialect=postgresql.dialect(paramstyle="numeric_dollar"),  # type: ignore[no-untyped-call]
        compile_kwargs={"render_postcompile": True},
    )
    assert compiled.positiontup is not None
    args = [compiled.params[name] for name in compiled.positiontup]
    out: dict[str, Any] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        cur = psycopg.ClientCursor(conn)
        cur.execute("DEALLOCATE ALL")
        cur.execute(f"PREPARE bench_search AS {compiled.string}")
        placeholders = ", ".join(["%s"] * len(args))
        for mode in ("force_custom_plan", "force_generic_plan"):
            cur.execute(f"SET plan_cache_mode = {mode}")
            cur.execute(
                f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE bench_search({placeholders})", args
            )
            row = cur.fetchone()
            doc = row[0] if row else []
            doc = json.loads(doc) if isinstance(doc, str) else doc
            top = doc[0]
            out[mode.removeprefix("force_").removesuffix("_plan")] = {
                "messages_access": _scan_nodes(top["Plan"]),
                "execution_ms": top.get("Execution Time"),
            }
        cur.execute("DEALLOCATE bench_search")
    return out


# -- the measurement ----------------------------------------------------------------------


def _op(
    memory: LookbackService,
    kind: str,
    uid: str,
    thread_id: str,
    anchor: int | None,
    checks: dict[str, Any],
    name: str,
) -> Op:
    if kind in SEARCH_KINDS:
        query = SEARCH_KINDS[kind]

        async def search(_: int) -> None:
            result, _ = await tool_outcome(
                lambda: memory.search_thread_messages(uid=uid, query=query, limit=5)
            )
            checks[name] = result.get("code") or len(result.get("items", []))

        return search

    async def read(_: int) -> None:
        result, _ = await tool_outcome(
            lambda: memory.read_thread_messages(
                uid=uid,
                thread_id=thread_id,
                message_id=anchor if kind == "read_anchored" else None,
                limit=20,
            )
        )
        checks[name] = result.get("code") or len(result.get("messages", []))

    return read


async def _measure_phase(
    env: BenchEnv,
    services: dict[str, LookbackService],
    gen: HistoryGenerator,
    *,
    rounds: int,
    warmup: int,
    budget_s: float,
) -> dict[str, Any]:
    data = await asyncio.to_thread(gen.data)
    checks: dict[str, Any] = {}
    ops: dict[str, Op] = {}
    for variant, memory in services.items():
        for kind in KINDS:
            name = f"{variant}:{kind}"
            ops[name] = _op(
                memory,
                kind,
                data.heavy_uid,
                data.big_thread_id,
                data.anchor_message_id,
                checks,
                name,
            )
    run = await interleave(ops, rounds=rounds, warmup=warmup, budget_s=budget_s, min_samples=5)
    stats = {name: summarize(s) for name, s in run.samples_ms.items()}
    table: dict[str, Any] = {}
    for kind in KINDS:
        shipped, custom = stats[f"shipped:{kind}"], stats[f"custom_plan:{kind}"]
        table[kind] = {
            "shipped": shipped,
            "custom_plan": custom,
            "shipped/custom_plan": ratio(shipped, custom),
            "result": {v: checks.get(f"{v}:{kind}") for v in VARIANTS},
        }
    plans = {
        kind: await asyncio.to_thread(explain_search, env.database_url, data.heavy_uid, query)
        for kind, query in SEARCH_KINDS.items()
    }
    return {
        "rounds": run.rounds,
        "retired": run.retired,
        "wall_s": run.wall_s,
        "kinds": table,
        "plans": plans,
        "samples_ms": {k: [round(v, 3) for v in vs] for k, vs in run.samples_ms.items()},
    }


async def run_b4(
    env: BenchEnv,
    *,
    totals: tuple[int, ...],
    users: int,
    rounds: int,
    warmup: int,
    budget_s: float,
    seed: int = 0,
    progress: bool = True,
) -> dict[str, Any]:
    services = {
        "shipped": env.container.services.lookback,
        "custom_plan": env.lookback_service(extra_options="-c plan_cache_mode=force_custom_plan"),
    }
    conn = psycopg.connect(env.database_url)
    admin = psycopg.connect(env.database_url, autocommit=True)
    try:
        schema = await asyncio.to_thread(trgm_schema, admin)
        gen = HistoryGenerator(conn, users=users, seed=seed, uid_prefix="b4", progress=progress)
        stages: list[dict[str, Any]] = []
        loaded = 0
        for total in totals:
            await asyncio.to_thread(drop_trgm_index, admin)
            add = total - loaded
            heavy_add = total // HEAVY_SHARE - gen.heavy_messages
            t0 = time.perf_counter()
            await asyncio.to_thread(gen.grow, messages=add, heavy_user_messages=heavy_add)
            load_s = time.perf_counter() - t0
            loaded = total
            print(
                f"[bench] B4 stage {total:,} rows loaded in {load_s:.1f}s "
                f"({add / load_s:,.0f} rows/s); measuring",
                flush=True,
            )
            stage: dict[str, Any] = {
                "total_messages": total,
                "heavy_messages": gen.heavy_messages,
                "users": users,
                "load_s": load_s,
                "load_rows_per_s": add / load_s if load_s else None,
                "phases": {},
            }
            stage["phases"]["no_index"] = await _measure_phase(
                env, services, gen, rounds=rounds, warmup=warmup, budget_s=budget_s
            )
            if schema is not None:
                stage["trgm_index"] = await asyncio.to_thread(create_trgm_index, admin, schema)
                print(
                    f"[bench] B4 stage {total:,}: trigram index built in "
                    f"{stage['trgm_index']['build_s']:.1f}s; measuring",
                    flush=True,
                )
                stage["phases"]["trgm"] = await _measure_phase(
                    env, services, gen, rounds=rounds, warmup=warmup, budget_s=budget_s
                )
            stages.append(stage)
    finally:
        conn.close()
        admin.close()
    return {
        "pg_trgm": schema is not None,
        "pg_trgm_schema": schema,
        "heavy_share": 1 / HEAVY_SHARE,
        "goal_p95_ms": GOAL_P95_MS,
        "kinds": list(KINDS),
        "search_terms": SEARCH_KINDS,
        "stages": stages,
    }
