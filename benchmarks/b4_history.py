"""B4 — history at scale: ranked search and reads for a heavy user as the table grows.

The database is grown in stages by :class:`~benchmarks.datagen.HistoryGenerator` (COPY into
``messages``; the product's trigger fills ``message_search``, migration 0008). Shape: the heavy
user owns 10 % of all messages up to 100k (1k of 10k, 10k of 100k, 100k of 1M) and stays at 100k
beyond (100k of 10M: one long-time power user among 10,000 users, so the 10M stage asks whether
the cost stays flat while the *table* grows 10x); users are ``max(--b4-users, total / 1000)``
(1,000 up to 1M, 10,000 at 10M).

At each stage, after the load (timed: rows/s with the trigger and the index maintained as in
production) and ``VACUUM ANALYZE message_search`` (timed), in phases:

* ``ranked`` — the product's search index as migrated, warm caches;
* ``ranked_cold`` — the same, every sample on cold caches (see :mod:`benchmarks._b4_cold`);
* ``no_btree_gin`` — where the migrated index is ``GIN (uid, terms)``: the migration's fallback
  for a server without btree_gin, ``GIN (terms)`` alone (built, measured warm, then dropped);

then the product's index is dropped and built again with ``CREATE INDEX`` (timed: what the
migration's build costs at this size, with this session's ``maintenance_work_mem``). A probe
compares COPY with and without the search trigger (the same 20k fresh rows, rolled back).

Inside a warm phase two engines run interleaved (a new seeded order each round):

* ``shipped`` — the app's own engine (``bootstrap``), i.e. what production runs;
* ``custom_plan`` — the same code on an engine with ``plan_cache_mode=force_custom_plan``.

Query kinds, all through ``LookbackService`` (the whole tool path) with ``limit`` 10:

* one term (:data:`SINGLE`): a common word (English / 2-character Chinese), a rare needle only
  in the heavy user's three oldest messages (English / 4-character Chinese), a term common across
  the other users but in the heavy user's history only in those three messages (English /
  3-character Chinese), misses (English / Chinese);
* several terms (:data:`MULTI`): 2, 4 (3 common + the needle) and 6 English words; Chinese words
  with the Chinese needle; English and Chinese together; 3 common words within a date window
  (the middle eighth of the heavy user's timeline, at most 92 days: 3 months of a 2-year
  history) or within one ordinary thread of ~100 messages; a quoted phrase plus a word (common
  and needle phrases); a miss of several terms;
* the two reads (latest window, window anchored in the middle of a long thread).

A search's result is its item count; where the needles should rank first, also how many of the
three needle messages are among the items (``10 (3 needles)``).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from sqlalchemy import event

from benchmarks._b4_cold import Evictor
from benchmarks._runner import Op, interleave
from benchmarks.datagen import TERMS, HistoryGenerator, message_text
from benchmarks.env import BenchEnv
from benchmarks.stats import ratio, summarize
from yuxi.agents.tools.tool_result import tool_outcome
from yuxi.services.lookback.service import LookbackService

SEARCH_TABLE = "message_search"
FALLBACK_INDEX = "b4_message_search_fallback"
HEAVY_SHARE = 10  # heavy user = 1/10 of all messages ...
HEAVY_MAX = 100_000  # ... up to 100k
USERS_PER_MESSAGES = 1000  # at least one user per 1000 messages
GOAL_P95_MS = 50.0
SEARCH_LIMIT = 10
WINDOW_SHARE = 8  # the date window: the middle 1/8 of the heavy user's timeline ...
WINDOW_MAX = timedelta(days=92)  # ... at most about 3 months
PROBE_ROWS = 20_000
PROBE_REPS = 3


@dataclass(frozen=True)
class Search:
    query: str
    filter: str | None = None  # "dates" | "thread" | None
    needles: bool = False  # the heavy user's three needle messages should be among the hits


_EN = [TERMS["common_en"], *TERMS["common_en_more"].split()]  # deploy cache server release ...
_CJK = [TERMS["common_cjk"], *TERMS["common_cjk_more"].split()]  # 部署 缓存 服务器 预算
_EN3 = " ".join(_EN[:3])

SINGLE: dict[str, Search] = {
    "search_hit_en": Search(TERMS["common_en"]),
    "search_hit_cjk2": Search(TERMS["common_cjk"]),
    "search_rare_en": Search(TERMS["rare_en"], needles=True),
    "search_rare_cjk4": Search(TERMS["rare_cjk"], needles=True),
    "search_crowd_en": Search(TERMS["crowd_en"], needles=True),
    "search_crowd_cjk3": Search(TERMS["crowd_cjk"], needles=True),
    "search_miss_en": Search(TERMS["miss_en"]),
    "search_miss_cjk3": Search(TERMS["miss_cjk"] + "骉"),
}
MULTI: dict[str, Search] = {
    "multi_en_2common": Search(" ".join(_EN[:2])),
    "multi_en_4mixed": Search(f"{_EN3} {TERMS['rare_en']}", needles=True),
    "multi_en_6common": Search(" ".join(_EN[:6])),
    "multi_cjk_mixed": Search(f"{_CJK[0]} {_CJK[1]} {TERMS['rare_cjk']}", needles=True),
    "multi_mixed_lang": Search(f"{_EN[0]} {_EN[3]} {_CJK[0]} {_CJK[1]}"),
    "multi_en_dates": Search(_EN3, filter="dates"),
    "multi_en_thread": Search(_EN3, filter="thread"),
    "phrase_en": Search(f'"{TERMS["phrase_en"]}" {_EN[2]}'),
    "phrase_rare_en": Search(f'"{TERMS["phrase_rare_en"]}" {_EN[0]}', needles=True),
    "miss_multi": Search(f"{TERMS['miss_en']} {TERMS['miss_cjk']}骉"),
}
SEARCHES: dict[str, Search] = {**SINGLE, **MULTI}
READ_KINDS = ("read_latest", "read_anchored")
KINDS = (*SEARCHES, *READ_KINDS)
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


# -- the stage's targets: date window, thread, needles -------------------------------------


@dataclass
class Targets:
    """What the filtered kinds and the checks need at one stage (read from the database)."""

    uid: str
    big_thread_id: str
    anchor: int | None
    thread_id: str  # an ordinary visible thread of the heavy user, for ``multi_en_thread``
    after: str
    before: str
    needle_ids: frozenset[int]
    facts: dict[str, Any]


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stage_targets(conn: psycopg.Connection[Any], gen: HistoryGenerator) -> Targets:
    data = gen.data()
    uid = data.heavy_uid
    row = conn.execute(
        "SELECT min(created_at), max(created_at) FROM messages WHERE uid = %s", (uid,)
    ).fetchone()
    assert row is not None and row[0] is not None
    first, last = row[0], row[1]
    width = min((last - first) / WINDOW_SHARE, WINDOW_MAX)
    start = first + (last - first - width) / 2
    end = start + width
    # A date (``2024-02-03``) where the window spans days, else a datetime; ``before`` always a
    # datetime: both forms are exercised at the 1M and 10M stages.
    if width >= timedelta(days=2):
        start = datetime(start.year, start.month, start.day, tzinfo=UTC)
        after = start.date().isoformat()
    else:
        after = _iso(start)
    in_window = conn.execute(
        "SELECT count(*) FROM messages WHERE uid = %s AND created_at >= %s AND created_at < %s",
        (uid, start, end),
    ).fetchone()
    others = [t for t in data.heavy_visible_thread_ids if t != data.big_thread_id]
    thread = conn.execute(
        "SELECT c.thread_id, count(*) FROM conversations c JOIN messages m "
        "ON m.conversation_id = c.id WHERE c.uid = %s AND c.thread_id = ANY(%s) "
        "GROUP BY c.thread_id ORDER BY count(*) DESC, c.thread_id LIMIT 1",
        (uid, others),
    ).fetchone()
    needles = conn.execute(
        "SELECT id FROM messages WHERE uid = %s ORDER BY id LIMIT 3", (uid,)
    ).fetchall()
    conn.commit()
    thread_id = str(thread[0]) if thread else data.big_thread_id
    return Targets(
        uid=uid,
        big_thread_id=data.big_thread_id,
        anchor=data.anchor_message_id,
        thread_id=thread_id,
        after=after,
        before=_iso(end),
        needle_ids=frozenset(int(r[0]) for r in needles),
        facts={
            "heavy_first_at": _iso(first),
            "heavy_last_at": _iso(last),
            "after": after,
            "before": _iso(end),
            "heavy_messages_in_window": int(in_window[0]) if in_window else None,
            "thread_id": thread_id,
            "thread_messages": int(thread[1]) if thread else None,
        },
    )


# -- the product's search index -----------------------------------------------------------


def _exists(conn: psycopg.Connection[Any], relation: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (relation,)).fetchone()
    return bool(row and row[0])


def search_gin_indexes(conn: psycopg.Connection[Any]) -> dict[str, str]:
    """The GIN indexes of ``message_search`` (name -> definition), the bench's own left out."""
    rows = conn.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s "
        "AND schemaname = current_schema() AND indexdef ILIKE '%% USING gin %%' "
        "AND indexname <> %s ORDER BY indexname",
        (SEARCH_TABLE, FALLBACK_INDEX),
    ).fetchall()
    return {str(name): str(definition) for name, definition in rows}


def fallback_definition(name: str, definition: str) -> str | None:
    """``GIN (uid, terms…)`` -> the same index without ``uid`` (what the migration builds where
    btree_gin is missing); ``None`` when the index has no leading ``uid``."""
    head = f"INDEX {name} ON "
    if head not in definition or " USING gin (uid, " not in definition:
        return None
    return definition.replace(head, f"INDEX {FALLBACK_INDEX} ON ", 1).replace(
        " USING gin (uid, ", " USING gin (", 1
    )


def _relation_bytes(conn: psycopg.Connection[Any], relation: str) -> int | None:
    row = conn.execute("SELECT pg_relation_size(to_regclass(%s))", (relation,)).fetchone()
    return int(row[0]) if row and row[0] is not None else None


def build_index(conn: psycopg.Connection[Any], name: str, definition: str) -> dict[str, Any]:
    """``CREATE INDEX`` as defined (not CONCURRENTLY: nothing else writes during the bench)."""
    t0 = time.perf_counter()
    conn.execute(definition)  # a definition read from pg_indexes
    build_s = time.perf_counter() - t0
    setting = conn.execute("SHOW maintenance_work_mem").fetchone()
    return {
        "name": name,
        "definition": definition,
        "build_s": build_s,
        "index_bytes": _relation_bytes(conn, name),
        "maintenance_work_mem": setting[0] if setting else None,
    }


def settle(conn: psycopg.Connection[Any]) -> float | None:
    """``VACUUM ANALYZE message_search`` (the GIN's pending list merged, statistics for the
    planner), as autovacuum would after a bulk load; its seconds, or ``None`` without it."""
    if not _exists(conn, SEARCH_TABLE):
        return None
    t0 = time.perf_counter()
    conn.execute(f"VACUUM ANALYZE {SEARCH_TABLE}")
    return time.perf_counter() - t0


# -- COPY with and without the search trigger ----------------------------------------------


def _search_triggers(conn: psycopg.Connection[Any]) -> list[str]:
    """User triggers on ``messages`` whose function mentions ``message_search``."""
    rows = conn.execute(
        "SELECT t.tgname FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid "
        "WHERE t.tgrelid = 'messages'::regclass AND NOT t.tgisinternal "
        "AND p.prosrc ILIKE %s ORDER BY t.tgname",
        (f"%{SEARCH_TABLE}%",),
    ).fetchall()
    return [str(r[0]) for r in rows]


def copy_probe(
    conn: psycopg.Connection[Any], gen: HistoryGenerator, *, rows: int, seed: int
) -> dict[str, Any]:
    """The same ``rows`` fresh rows COPYed with and without the search trigger, each time in a
    transaction that is rolled back (the data is left as it was), ``PROBE_REPS`` times each,
    alternating; the best of each. The rows go to another user's thread than the heavy one's,
    so their dead index entries stay out of the heavy user's way."""
    triggers = _search_triggers(conn)
    conn.commit()
    owner = gen.light_uids[0] if gen.light_uids else gen.heavy_uid
    threads = gen.threads.get(owner, [])
    if not triggers or not threads:
        return {"triggers": triggers}
    rng = random.Random(seed)
    thread = threads[0]
    moment = datetime(2020, 1, 1, tzinfo=UTC)
    batch = [
        (thread.id, thread.uid, "user", "text", message_text(rng), moment) for _ in range(rows)
    ]
    seconds: dict[str, list[float]] = {"with_trigger": [], "without_trigger": []}
    for rep in range(PROBE_REPS):
        order = ("with_trigger", "without_trigger")
        for variant in order if rep % 2 == 0 else reversed(order):
            with conn.cursor() as cur:
                if variant == "without_trigger":
                    for name in triggers:
                        cur.execute(f'ALTER TABLE messages DISABLE TRIGGER "{name}"')
                t0 = time.perf_counter()
                with cur.copy(
                    "COPY messages (conversation_id, uid, role, message_type, content, "
                    "created_at) FROM STDIN"
                ) as copy:
                    for row in batch:
                        copy.write_row(row)
                seconds[variant].append(time.perf_counter() - t0)
            conn.rollback()
    best = {k: min(v) for k, v in seconds.items()}
    return {
        "triggers": triggers,
        "rows": rows,
        "reps": PROBE_REPS,
        "rows_per_s": {k: rows / v for k, v in best.items()},
        "with/without": best["with_trigger"] / best["without_trigger"],
    }


# -- plans ----------------------------------------------------------------------------------

_SCANNED = ("messages", SEARCH_TABLE)
_READ_ONLY = re.compile(r"^\s*(SELECT|WITH)\b", re.IGNORECASE)
_WRITES = re.compile(r"\b(INSERT|UPDATE|DELETE|MERGE)\b", re.IGNORECASE)


def _scan_nodes(plan: dict[str, Any]) -> list[str]:
    """Access paths of ``messages`` and ``message_search`` in an EXPLAIN JSON plan, with the
    rows each returned (all loops): ``Bitmap[(ix_a & ix_b)] message_search 41,520 rows``…"""
    found: list[str] = []

    def bitmap(node: dict[str, Any]) -> str:
        ntype = node.get("Node Type")
        if ntype == "Bitmap Index Scan":
            return str(node.get("Index Name"))
        parts = [bitmap(child) for child in node.get("Plans", [])]
        joined = (" & " if ntype == "BitmapAnd" else " | ").join(parts)
        return f"({joined})" if len(parts) > 1 else joined

    def walk(node: dict[str, Any]) -> None:
        relation = node.get("Relation Name")
        if relation in _SCANNED:
            ntype = str(node.get("Node Type", ""))
            rows = int(node.get("Actual Rows", 0) * node.get("Actual Loops", 1))
            if ntype == "Bitmap Heap Scan":
                label = f"Bitmap[{' '.join(bitmap(child) for child in node.get('Plans', []))}]"
            else:
                label = ntype + (" Backward" if node.get("Scan Direction") == "Backward" else "")
                if node.get("Index Name"):
                    label += f" {node['Index Name']}"
            found.append(f"{label} {relation} {rows:,} rows")
            if ntype == "Bitmap Heap Scan":
                return
        for child in node.get("Plans", []):
            walk(child)

    walk(plan)
    return found


class StatementLog:
    """The statements a service's engine sends, while :attr:`on` (SQLAlchemy's
    ``before_cursor_execute`` event): what the search runs, without importing how it builds it."""

    def __init__(self, env: BenchEnv) -> None:
        self.service = env.lookback_service(pool_size=1)
        self.on = False
        self.statements: list[tuple[str, Any]] = []
        event.listen(env._engines[-1].sync_engine, "before_cursor_execute", self._seen)

    def _seen(self, *args: Any) -> None:
        # (connection, cursor, statement, parameters, context, executemany)
        if self.on:
            self.statements.append((str(args[2]), args[3]))

    def take(self) -> list[tuple[str, Any]]:
        taken, self.statements = self.statements, []
        return taken


def explain(url: str, statements: list[tuple[str, Any]]) -> dict[str, Any]:
    """Replay one tool call's statements in a transaction that is rolled back: its ``SET``\\ s
    as they were, its reads of the history tables under ``EXPLAIN (ANALYZE, FORMAT JSON)``
    (parameters bound client-side, i.e. planned with their values: a custom plan)."""
    access: list[str] = []
    total_ms = 0.0
    with psycopg.connect(url) as conn:
        cur = psycopg.ClientCursor(conn)
        try:
            for sql, params in statements:
                if sql.lstrip().upper().startswith("SET "):
                    cur.execute(sql, params or None)
                    continue
                if not _READ_ONLY.match(sql) or _WRITES.search(sql):
                    continue
                if not any(re.search(rf"\b{name}\b", sql) for name in _SCANNED):
                    continue
                cur.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params or None)
                row = cur.fetchone()
                doc = row[0] if row else []
                doc = json.loads(doc) if isinstance(doc, str) else doc
                access += _scan_nodes(doc[0]["Plan"])
                total_ms += float(doc[0].get("Execution Time") or 0.0)
        except psycopg.Error as exc:
            return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
        finally:
            conn.rollback()
    return {"messages_access": access, "execution_ms": total_ms}


# -- the measurement ----------------------------------------------------------------------


def _filters(search: Search, targets: Targets) -> dict[str, str]:
    if search.filter == "dates":
        return {"after": targets.after, "before": targets.before}
    if search.filter == "thread":
        return {"thread_id": targets.thread_id}
    return {}


def _found(result: dict[str, Any], search: Search, targets: Targets) -> Any:
    if result.get("code"):
        return result["code"]
    items = result.get("items", [])
    if not search.needles:
        return len(items)
    needles = sum(1 for item in items if item.get("message_id") in targets.needle_ids)
    return f"{len(items)} ({needles} needles)"


def _op(
    memory: LookbackService, kind: str, targets: Targets, checks: dict[str, Any], name: str
) -> Op:
    if kind in SEARCHES:
        search = SEARCHES[kind]
        filters = _filters(search, targets)

        async def search_call(_: int) -> None:
            result, _ = await tool_outcome(
                lambda: memory.search_thread_messages(
                    uid=targets.uid, query=search.query, limit=SEARCH_LIMIT, **filters
                )
            )
            checks[name] = _found(result, search, targets)

        return search_call

    async def read(_: int) -> None:
        result, _ = await tool_outcome(
            lambda: memory.read_thread_messages(
                uid=targets.uid,
                thread_id=targets.big_thread_id,
                message_id=targets.anchor if kind == "read_anchored" else None,
                limit=20,
            )
        )
        checks[name] = result.get("code") or len(result.get("messages", []))

    return read


def _ops(
    services: dict[str, LookbackService], targets: Targets, checks: dict[str, Any]
) -> dict[str, Op]:
    return {
        f"{variant}:{kind}": _op(memory, kind, targets, checks, f"{variant}:{kind}")
        for variant, memory in services.items()
        for kind in KINDS
    }


async def _plans(env: BenchEnv, log: StatementLog, targets: Targets) -> dict[str, Any]:
    checks: dict[str, Any] = {}
    plans: dict[str, Any] = {}
    ops = _ops({"explain": log.service}, targets, checks)
    for kind in SEARCHES:
        log.take()
        log.on = True
        try:
            await ops[f"explain:{kind}"](0)
        finally:
            log.on = False
        plans[kind] = await asyncio.to_thread(explain, env.database_url, log.take())
    return plans


async def _measure_phase(
    env: BenchEnv,
    services: dict[str, LookbackService],
    log: StatementLog,
    targets: Targets,
    *,
    rounds: int,
    warmup: int,
    budget_s: float,
) -> dict[str, Any]:
    checks: dict[str, Any] = {}
    ops = _ops(services, targets, checks)
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
    return {
        "rounds": run.rounds,
        "retired": run.retired,
        "wall_s": run.wall_s,
        "kinds": table,
        "plans": await _plans(env, log, targets),
        "samples_ms": {k: [round(v, 3) for v in vs] for k, vs in run.samples_ms.items()},
    }


async def _measure_cold(
    memory: LookbackService, targets: Targets, evictor: Evictor, *, samples: int
) -> dict[str, Any]:
    """Every sample of every kind (shipped engine) right after :meth:`Evictor.evict`."""
    checks: dict[str, Any] = {}
    ops = _ops({"shipped": memory}, targets, checks)
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


def _say(message: str) -> None:
    print(f"[bench] B4 {message}", flush=True)


async def run_b4(
    env: BenchEnv,
    *,
    totals: tuple[int, ...],
    users: int,
    rounds: int,
    warmup: int,
    budget_s: float,
    cold_samples: int = 7,
    fallback: bool = True,
    seed: int = 0,
    progress: bool = True,
) -> dict[str, Any]:
    services = {
        "shipped": env.container.services.lookback,
        "custom_plan": env.lookback_service(extra_options="-c plan_cache_mode=force_custom_plan"),
    }
    log = StatementLog(env)
    users = users_for(totals, users)
    conn = psycopg.connect(env.database_url)
    admin = psycopg.connect(env.database_url, autocommit=True)
    evictor: Evictor | None = None
    has_table = False
    try:
        has_table = await asyncio.to_thread(_exists, admin, SEARCH_TABLE)
        gen = HistoryGenerator(conn, users=users, seed=seed, uid_prefix="b4", progress=progress)
        stages: list[dict[str, Any]] = []
        loaded = 0
        for total in totals:
            add = total - loaded
            heavy_add = heavy_messages(total) - gen.heavy_messages
            t0 = time.perf_counter()
            await asyncio.to_thread(gen.grow, messages=add, heavy_user_messages=heavy_add)
            load_s = time.perf_counter() - t0
            loaded = total
            settle_s = await asyncio.to_thread(settle, admin)
            _say(
                f"stage {total:,}: {add:,} rows loaded in {load_s:.1f}s "
                f"({add / load_s:,.0f} rows/s), settled in {settle_s or 0:.1f}s; measuring"
            )
            targets = await asyncio.to_thread(stage_targets, conn, gen)
            stage: dict[str, Any] = {
                "total_messages": total,
                "heavy_messages": gen.heavy_messages,
                "users": users,
                "load_s": load_s,
                "load_rows_per_s": add / load_s if load_s else None,
                "settle_s": settle_s,
                "targets": targets.facts,
                "phases": {},
            }
            phases = stage["phases"]
            phases["ranked"] = await _measure_phase(
                env, services, log, targets, rounds=rounds, warmup=warmup, budget_s=budget_s
            )
            if cold_samples > 0:
                if evictor is None:
                    evictor = await asyncio.to_thread(Evictor, admin)
                _say(f"stage {total:,}: cold caches")
                phases["ranked_cold"] = await _measure_cold(
                    services["shipped"], targets, evictor, samples=cold_samples
                )
            indexes = await asyncio.to_thread(search_gin_indexes, admin)
            for name, definition in indexes.items():
                other = fallback_definition(name, definition) if fallback else None
                if other is not None:
                    stage["fallback_index"] = await asyncio.to_thread(
                        build_index, admin, FALLBACK_INDEX, other
                    )
                    await asyncio.to_thread(admin.execute, f"DROP INDEX {name}")
                    _say(f"stage {total:,}: without btree_gin ({other})")
                    phases["no_btree_gin"] = await _measure_phase(
                        env,
                        services,
                        log,
                        targets,
                        rounds=rounds,
                        warmup=warmup,
                        budget_s=budget_s,
                    )
                else:
                    await asyncio.to_thread(admin.execute, f"DROP INDEX {name}")
                stage["search_index"] = await asyncio.to_thread(
                    build_index, admin, name, definition
                )
                await asyncio.to_thread(admin.execute, f"DROP INDEX IF EXISTS {FALLBACK_INDEX}")
                _say(f"stage {total:,}: {name} built in {stage['search_index']['build_s']:.1f}s")
            if has_table:
                stage["copy_probe"] = await asyncio.to_thread(
                    copy_probe, conn, gen, rows=min(PROBE_ROWS, total), seed=seed + total
                )
            for relation in ("messages", SEARCH_TABLE):
                stage[f"{relation}_bytes"] = await asyncio.to_thread(
                    _relation_bytes, admin, relation
                )
            stages.append(stage)
    finally:
        if evictor is not None:
            evictor.drop_ballast()
        conn.close()
        admin.close()
    return {
        "search_table": has_table,
        "shape": {
            "heavy": f"{100 // HEAVY_SHARE} % of all rows up to {HEAVY_MAX:,}",
            "users": users,
        },
        "goal_p95_ms": GOAL_P95_MS,
        "limit": SEARCH_LIMIT,
        "kinds": list(KINDS),
        "multi_kinds": list(MULTI),
        "searches": {
            kind: {"query": s.query, "filter": s.filter, "needles": s.needles}
            for kind, s in SEARCHES.items()
        },
        "stages": stages,
    }
