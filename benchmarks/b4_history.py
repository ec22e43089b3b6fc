"""B4 — history at scale: search and read for a heavy user as the table grows.

The database is grown in stages by :class:`~benchmarks.datagen.HistoryGenerator` (COPY). Shape:
the heavy user owns 10 % of all messages up to 100k (1k of 10k, 10k of 100k, 100k of 1M) and
stays at 100k beyond (100k of 10M: one long-time power user among 10,000 users, so the 10M
stage asks whether the cost stays flat while the *table* grows 10x); users are
``max(--b4-users, total / 1000)`` (1,000 up to 1M, 10,000 at 10M). At each stage, in phases:

* ``no_index`` — no trigram index: the fallback of a server without pg_trgm/btree_gin;
* ``trgm`` — plus ``ix_messages_uid_content_trgm`` (migration 0005: GIN on ``uid`` via
  btree_gin and ``content gin_trgm_ops``), only where the server has both extensions; the build
  time and size are reported;
* ``trgm_cold`` — the same index, every sample on cold caches (see :mod:`benchmarks._b4_cold`).

and, interleaved (a new seeded order each round) inside a warm phase, two engines:

* ``shipped`` — the app's own engine (``bootstrap``), i.e. what production runs: psycopg prepares
  a statement server-side after 5 executions and PostgreSQL may then switch to a *generic* plan;
* ``custom_plan`` — the same code on an engine with ``plan_cache_mode=force_custom_plan``.

Query kinds (all through ``LookbackService``, i.e. the whole tool path): hits for a common word
(English / 2-character Chinese), a rare needle only in the heavy user's three oldest messages
(English / 4-character Chinese), a term common across the other users but in the heavy user's
history only in those same three messages (English / 3-character Chinese), misses of 3+
characters (English / Chinese), queries of 1 and 2 characters (English / Chinese, hit and
miss: these search the newest ``SEARCH_RECENT_MESSAGES`` only), and the two reads (latest
window, window anchored in the middle of a long thread).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import psycopg
from sqlalchemy.dialects import postgresql

from yuxi.agents.tools.tool_result import tool_outcome
from yuxi.limits import SEARCH_FIRST_PASS_MESSAGES, SEARCH_RECENT_MESSAGES
from yuxi.repositories._history_queries import index_key, search_statement
from yuxi.services.lookback_service import LookbackService

from ._b4_cold import Evictor
from ._env import BenchEnv
from ._runner import Op, interleave
from ._stats import ratio, summarize
from .datagen import TERMS, HistoryGenerator

TRGM_INDEX = "ix_messages_uid_content_trgm"
GLOBAL_TRGM_INDEX = "ix_messages_content_trgm"  # 0002's, dropped by 0005
HEAVY_SHARE = 10  # heavy user = 1/10 of all messages ...
HEAVY_MAX = 100_000  # ... up to 100k
USERS_PER_MESSAGES = 1000  # at least one user per 1000 messages
GOAL_P95_MS = 50.0
SEARCH_KINDS = {
    "search_hit_en": TERMS["common_en"],
    "search_hit_cjk2": TERMS["common_cjk"],
    "search_rare_en": TERMS["rare_en"],
    "search_rare_cjk4": TERMS["rare_cjk"],
    "search_crowd_en": TERMS["crowd_en"],
    "search_crowd_cjk3": TERMS["crowd_cjk"],
    "search_miss_en": TERMS["miss_en"],
    "search_miss_cjk3": TERMS["miss_cjk"] + "骉",
    "search_1_en": "k",
    "search_1_cjk": "天",
    "search_1_cjk_miss": TERMS["miss_cjk"][0],
    "search_2_en_miss": "qz",
    "search_2_cjk_miss": TERMS["miss_cjk"],
}
READ_KINDS = ("read_latest", "read_anchored")
KINDS = (*SEARCH_KINDS, *READ_KINDS)
VARIANTS = ("shipped", "custom_plan")

SCALES: dict[str, tuple[int, ...]] = {
    "quick": (10_000, 100_000),
    "full": (10_000, 100_000, 1_000_000),
}
_SUFFIXES = {"k": 1_000, "m": 1_000_000}


def _total(part: str) -> int:
    text = part.strip().replace("_", "").lower()
    factor = _SUFFIXES.get(text[-1:], 1)
    return int(text[:-1] if factor > 1 else text) * factor


def parse_scale(value: str) -> tuple[int, ...]:
    """``quick``, ``full`` or comma-separated totals (``10M``, ``100k``, ``1000000``)."""
    if value in SCALES:
        return SCALES[value]
    try:
        totals = tuple(sorted(_total(part) for part in value.split(",") if part.strip()))
    except ValueError:
        totals = ()
    if not totals or totals[0] < 100:
        raise ValueError("--scale: quick, full, or comma-separated totals >= 100 (10M, 100k)")
    return totals


def heavy_messages(total: int) -> int:
    """The heavy user's messages at ``total`` rows (the shape in the module docs)."""
    return min(total // HEAVY_SHARE, HEAVY_MAX)


def users_for(totals: tuple[int, ...], users: int) -> int:
    return max(users, max(totals) // USERS_PER_MESSAGES)


# -- pg_trgm + btree_gin ------------------------------------------------------------------


def _extension_schema(conn: psycopg.Connection[Any], name: str) -> str | None:
    """Schema of an installed extension, installing it when available; ``None`` if impossible."""
    query = (
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = %s"
    )
    row = conn.execute(query, (name,)).fetchone()
    if row:
        return str(row[0])
    if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = %s", (name,)).fetchone():
        try:
            conn.execute(f"CREATE EXTENSION IF NOT EXISTS {name}")
        except psycopg.Error:
            return None
        row = conn.execute(query, (name,)).fetchone()
        return str(row[0]) if row else None
    return None


def trgm_schema(conn: psycopg.Connection[Any]) -> str | None:
    """Schema of pg_trgm when both pg_trgm and btree_gin are (or can be) installed."""
    schema = _extension_schema(conn, "pg_trgm")
    if schema is None or _extension_schema(conn, "btree_gin") is None:
        return None
    return schema


def create_trgm_index(conn: psycopg.Connection[Any], schema: str) -> dict[str, Any]:
    """Build migration 0005's index (not CONCURRENTLY: nothing else writes during the bench)."""
    conn.execute("SET maintenance_work_mem = '512MB'")
    t0 = time.perf_counter()
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {TRGM_INDEX} "
        f'ON messages USING gin (uid, content "{schema}".gin_trgm_ops)'
    )
    build_s = time.perf_counter() - t0
    conn.execute("RESET maintenance_work_mem")
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
    conn.execute(f"DROP INDEX IF EXISTS {GLOBAL_TRGM_INDEX}")


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


def _explain(url: str, statement: tuple[Any, dict[str, Any]]) -> dict[str, Any]:
    compiled = statement[0].compile(
        # SQLAlchemy's psycopg dialect declares an unannotated ``__init__(self, **kwargs)``.
        dialect=postgresql.dialect(paramstyle="numeric_dollar"),  # type: ignore[no-untyped-call]
    )
    # The values, with the IN lists expanded to one positional parameter per item.
    expanded = compiled.construct_expanded_state(statement[1])
    assert expanded.positiontup is not None
    args = [expanded.parameters[name] for name in expanded.positiontup]
    out: dict[str, Any] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        cur = psycopg.ClientCursor(conn)
        cur.execute("DEALLOCATE ALL")
        cur.execute(f"PREPARE bench_search AS {expanded.statement}")
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


def explain_search(url: str, uid: str, query: str) -> dict[str, Any]:
    """Messages' access paths in the custom and the generic plan of the statements the search
    runs: ``recent`` (the newest ``SEARCH_FIRST_PASS_MESSAGES`` or ``SEARCH_RECENT_MESSAGES``)
    and, for a query with an index
    key, ``indexed`` (everything, through the per-user trigram index where it exists)."""
    plans = {
        "recent": _explain(url, search_statement(uid, query, 5, window=SEARCH_RECENT_MESSAGES))
    }
    if index_key(query) is not None:
        plans["indexed"] = _explain(url, search_statement(uid, query, 5))
    return plans


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
            found = result.get("code") or len(result.get("items", []))
            if result.get("complete") is False:
                found = f"{found} of newest {result.get('searched_messages')}"
            checks[name] = found

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


def _ops(services: dict[str, LookbackService], data: Any, checks: dict[str, Any]) -> dict[str, Op]:
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
    return ops


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
    ops = _ops(services, data, checks)
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


async def _measure_cold(
    memory: LookbackService, gen: HistoryGenerator, evictor: Evictor, *, samples: int
) -> dict[str, Any]:
    """Every sample of every kind (shipped engine) right after :meth:`Evictor.evict`."""
    data = await asyncio.to_thread(gen.data)
    checks: dict[str, Any] = {}
    ops = _ops({"shipped": memory}, data, checks)
    samples_ms: dict[str, list[float]] = {kind: [] for kind in KINDS}
    residual: list[int] = []
    started = time.perf_counter()
    for r in range(samples):
        for kind in KINDS if r % 2 == 0 else reversed(KINDS):
            await asyncio.to_thread(evictor.evict)
            left = await asyncio.to_thread(evictor.resident_buffers)
            if left is not None:
                residual.append(left)
            t0 = time.perf_counter_ns()
            await ops[f"shipped:{kind}"](r)
            samples_ms[kind].append((time.perf_counter_ns() - t0) / 1e6)
    return {
        "rounds": samples,
        "wall_s": time.perf_counter() - started,
        "method": evictor.method,
        "resident_buffers_after_evict_max": max(residual) if residual else None,
        "kinds": {
            kind: {
                "shipped": summarize(samples_ms[kind]),
                "result": {"shipped": checks.get(f"shipped:{kind}")},
            }
            for kind in KINDS
        },
        "samples_ms": {k: [round(v, 3) for v in vs] for k, vs in samples_ms.items()},
    }


async def run_b4(
    env: BenchEnv,
    *,
    totals: tuple[int, ...],
    users: int,
    rounds: int,
    warmup: int,
    budget_s: float,
    cold_samples: int = 7,
    seed: int = 0,
    progress: bool = True,
) -> dict[str, Any]:
    services = {
        "shipped": env.container.services.lookback,
        "custom_plan": env.lookback_service(extra_options="-c plan_cache_mode=force_custom_plan"),
    }
    users = users_for(totals, users)
    conn = psycopg.connect(env.database_url)
    admin = psycopg.connect(env.database_url, autocommit=True)
    evictor: Evictor | None = None
    try:
        schema = await asyncio.to_thread(trgm_schema, admin)
        gen = HistoryGenerator(conn, users=users, seed=seed, uid_prefix="b4", progress=progress)
        stages: list[dict[str, Any]] = []
        loaded = 0
        for total in totals:
            await asyncio.to_thread(drop_trgm_index, admin)
            add = total - loaded
            heavy_add = heavy_messages(total) - gen.heavy_messages
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
                    f"[bench] B4 stage {total:,}: per-user trigram index built in "
                    f"{stage['trgm_index']['build_s']:.1f}s; measuring",
                    flush=True,
                )
                stage["phases"]["trgm"] = await _measure_phase(
                    env, services, gen, rounds=rounds, warmup=warmup, budget_s=budget_s
                )
                if cold_samples > 0:
                    if evictor is None:
                        evictor = await asyncio.to_thread(Evictor, admin)
                    print(f"[bench] B4 stage {total:,}: cold caches", flush=True)
                    stage["phases"]["trgm_cold"] = await _measure_cold(
                        services["shipped"], gen, evictor, samples=cold_samples
                    )
            stages.append(stage)
    finally:
        if evictor is not None:
            evictor.drop_ballast()
        conn.close()
        admin.close()
    return {
        "pg_trgm": schema is not None,
        "pg_trgm_schema": schema,
        "shape": {
            "heavy": f"{100 // HEAVY_SHARE} % of all rows up to {HEAVY_MAX:,}",
            "users": users,
        },
        "recent_messages": SEARCH_RECENT_MESSAGES,
        "first_pass_messages": SEARCH_FIRST_PASS_MESSAGES,
        "goal_p95_ms": GOAL_P95_MS,
        "kinds": list(KINDS),
        "search_terms": SEARCH_KINDS,
        "stages": stages,
    }
