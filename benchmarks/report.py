"""Write ``report.json``, ``report.md`` and the B2 chart (``b2_latency_vs_concurrency.png``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from benchmarks.b7.report import md_b7
from benchmarks.b8_report import md_b8

CHART_NAME = "b2_latency_vs_concurrency.png"


def _num(value: Any, digits: int | None = None) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if digits is not None:
            return f"{value:,.{digits}f}"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        if abs(value) >= 1:
            return f"{value:.2f}"
        return f"{value:.3f}"
    return str(value)


def _ratio(value: Any) -> str:
    return (
        "–"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else f"{value:.2f}×"
    )


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | tuple):
        return list(value)
    return str(value)


def _clean(value: Any) -> Any:
    """NaN/inf are not JSON: write them as null."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def write_json(report: dict[str, Any], out: Path) -> Path:
    path = out / "report.json"
    path.write_text(
        json.dumps(_clean(report), ensure_ascii=False, indent=1, default=_json_default) + "\n",
        encoding="utf-8",
    )
    return path


# -- chart --------------------------------------------------------------------------------


def write_chart(b2: dict[str, Any], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = b2["levels"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 6))
    styles = {
        "ours/one_uid": ("tab:blue", "ours, one uid"),
        "ours/distinct_uids": ("tab:green", "ours, distinct uids"),
        "naive/one_uid": ("tab:red", "naive, one uid"),
        "naive/distinct_uids": ("tab:orange", "naive, distinct uids"),
    }
    for key, (color, label) in styles.items():
        series = b2["series"][key]
        p50 = [series[str(lv)]["latency_ms"]["p50"] for lv in levels]
        p99 = [series[str(lv)]["latency_ms"]["p99"] for lv in levels]
        tput = [series[str(lv)]["writes_per_s"] for lv in levels]
        lost = sum(series[str(lv)]["lost_updates"] for lv in levels)
        suffix = f" (lost {lost})"
        left.plot(levels, p50, "o-", color=color, label=f"{label} p50{suffix}")
        left.plot(levels, p99, "s--", color=color, alpha=0.7, label=f"{label} p99")
        right.plot(levels, tput, "o-", color=color, label=label)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(levels)
        ax.set_xticklabels([str(lv) for lv in levels])
        ax.set_xlabel(f"concurrent writers (over {b2['processes']} OS processes)")
        ax.grid(True, which="both", alpha=0.3)
    left.set_yscale("log")
    left.set_ylabel("latency per write (ms, log)")
    left.set_title("B2: write latency vs. concurrency")
    left.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    right.set_yscale("log")
    right.set_ylabel("writes/s (log)")
    right.set_title("B2: throughput vs. concurrency")
    right.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    fig.tight_layout()
    path = out / CHART_NAME
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# -- markdown -----------------------------------------------------------------------------


def _stats_rows(stats: dict[str, Any], names: list[str]) -> list[list[str]]:
    return [
        [
            f"`{name}`",
            _num(stats[name]["n"]),
            _num(stats[name]["p50"]),
            _num(stats[name]["p95"]),
            _num(stats[name]["p99"]),
            _num(stats[name]["mean"]),
        ]
        for name in names
    ]


def _ratio_rows(ratios: dict[str, Any]) -> list[list[str]]:
    return [
        [f"`{name}`", _ratio(r["p50"]), _ratio(r["p95"]), _ratio(r["p99"])]
        for name, r in ratios.items()
    ]


def _md_b1(b1: dict[str, Any]) -> list[str]:
    goal = b1["goal"]
    lines = [
        "## B1 — write path (`remember_memory` end to end)",
        "",
        f"{b1['rounds']} interleaved rounds (+{b1['warmup_rounds']} warm-up); each round resets "
        f"MEMORY.md to {b1['base_bytes']:,} B (untimed) and appends a distinct fact "
        f"(+{b1['appended_bytes']} B) with every variant.",
        "",
    ]
    main = [n for n in b1["stats_ms"] if not n.startswith("diag_")]
    diag = [n for n in b1["stats_ms"] if n.startswith("diag_")]
    lines += _table(
        ["variant", "n", "p50 ms", "p95 ms", "p99 ms", "mean ms"],
        _stats_rows(b1["stats_ms"], main),
    )
    lines += _table(["ratio", "p50", "p95", "p99"], _ratio_rows(b1["ratios"]))
    cpu = b1["cpu_ms"]
    lines += [
        "CPU time of the benchmark process per call, p50 (the database server's is not "
        "counted): on the event loop's thread, and on all its threads (worker threads' "
        "file I/O included).",
        "",
    ]
    lines += _table(
        ["variant", "event loop ms", "all threads ms", "wall p50 ms"],
        [
            [
                f"`{name}`",
                _num(c["loop_p50"]),
                _num(c["process_p50"]),
                _num(b1["stats_ms"][name]["p50"]),
            ]
            for name, c in cpu.items()
        ],
    )
    if diag:
        lines += [
            "Diagnostics (same rounds): ours again for a second user (an A/A check: how far "
            "two identical variants drift apart in this run), the floor before versions "
            "existed (no version row), "
            "ours with `synchronous_commit = off` (a lever the product does not pull) and ours "
            "on an engine with SQLAlchemy's pre-ping on every checkout (the app's engine pings "
            "only a connection idle for more than 2 s).",
            "",
        ]
        lines += _table(
            ["part", "n", "p50 ms", "p95 ms", "p99 ms", "mean ms"],
            _stats_rows(b1["stats_ms"], diag),
        )
        lines += _table(["ratio", "p50", "p95", "p99"], _ratio_rows(b1["diagnostic_ratios"]))
    verdict = "**met**" if goal["met"] else "**not met**"
    lines += [
        f"Goal: ours/floor at p50 ≤ {goal['target']} → {_ratio(goal['value'])} — {verdict}.",
        "",
        "Checks: floor wrote the same bytes as ours: "
        f"{_num(b1['checks']['floor_bytes_equal_ours'])}; failed calls: {b1['failures']}.",
        "",
    ]
    checks = b1["checks"]
    if "ours_statements_per_call" in checks:
        lines += [
            f"Per call, ours: {checks['ours_statements_per_call']} SQL statements (+ psycopg's "
            f"`BEGIN`), {checks['ours_pool_checkouts_per_call']} pool checkout(s) (no ping: "
            f"the connection was idle < 2 s), {checks['ours_thread_hops_per_call']} "
            "worker-thread hops (the staging hop overlaps the record statement); the "
            f"floor: {checks['floor_round_trips_per_call']} round trips, "
            f"{checks['floor_thread_hops_per_call']} hops. Ours' statements: "
            + "; ".join(f"`{s}`" for s in checks["ours_statements"]),
            "",
        ]
    return lines


def _md_b2(b2: dict[str, Any]) -> list[str]:
    lines = [
        "## B2 — contention across OS processes",
        "",
        f"{b2['processes']} writer processes; each writer appends {b2['writes_per_writer']} "
        f"distinct entries; {b2['reps']} repetition(s) per level, variants interleaved. "
        "Lost = entries not present exactly once afterwards.",
        "",
    ]
    for scope in ("one_uid", "distinct_uids"):
        ours, naive = b2["series"][f"ours/{scope}"], b2["series"][f"naive/{scope}"]
        rows = []
        for level in b2["levels"]:
            o, n = ours[str(level)], naive[str(level)]
            r = b2["ratios"][scope][str(level)]
            rows.append(
                [
                    str(level),
                    _num(o["writes_per_s"]),
                    _num(o["latency_ms"]["p50"]),
                    _num(o["latency_ms"]["p99"]),
                    f"**{o['lost_updates']}**",
                    str(o["errors"]),
                    _num(n["writes_per_s"]),
                    _num(n["latency_ms"]["p99"]),
                    f"**{n['lost_updates']}** / {n['writes']}",
                    _ratio(r["p99_ours/naive"]),
                ]
            )
        title = (
            "one uid (all writers on the same MEMORY.md)"
            if scope == "one_uid"
            else ("distinct uids (one MEMORY.md per writer)")
        )
        lines += [f"**{title}**", ""]
        lines += _table(
            [
                "writers",
                "ours writes/s",
                "ours p50 ms",
                "ours p99 ms",
                "ours lost",
                "ours errors",
                "naive writes/s",
                "naive p99 ms",
                "naive lost / writes",
                "p99 ours/naive",
            ],
            rows,
        )
    totals = b2["lost_updates_total"]
    lines += [
        "Lost updates in total: "
        + ", ".join(f"`{k}` {v}" for k, v in totals.items())
        + f". Chart: `{CHART_NAME}`.",
        "",
    ]
    return lines


def _md_b3(b3: dict[str, Any]) -> list[str]:
    lines = [
        "## B3 — per-run memory read side (UserConfig query + ≤ 24 KiB read + block render)",
        "",
        f"{b3['rounds']} interleaved rounds; MEMORY.md {b3['memory_file_bytes']:,} B; rendered "
        f"block {b3['block_bytes'].get('ours_20k_block', 0):,} B (empty file: "
        f"{b3['block_bytes'].get('ours_empty_block', 0):,} B of rules).",
        "",
    ]
    lines += _table(
        ["variant", "n", "p50 ms", "p95 ms", "p99 ms", "mean ms"],
        _stats_rows(b3["stats_ms"], list(b3["stats_ms"])),
    )
    lines += _table(["ratio", "p50", "p95", "p99"], _ratio_rows(b3["ratios"]))
    return lines


def _ok(p95: float, goal: float) -> str:
    if p95 is None or (isinstance(p95, float) and math.isnan(p95)):
        return "–"
    return "✓" if p95 <= goal else "✗"


def _cell(st: dict[str, Any], goal: float, rounds: int) -> str:
    thin = f" (n={st['n']})" if st["n"] < rounds else ""
    return f"{_num(st['p50'])} / {_num(st['p95'])} {_ok(st['p95'], goal)}{thin}"


def _access(plan: dict[str, Any]) -> str:
    if not plan:
        return "–"
    if "error" in plan:
        return f"EXPLAIN failed: {plan['error']}"
    return (", ".join(plan.get("messages_access", [])) or "–") + (
        f" ({_num(plan['execution_ms'])} ms)" if plan.get("execution_ms") is not None else ""
    )


def _md_b4_plans(b4: dict[str, Any], phase: str, ph: dict[str, Any]) -> list[str]:
    rows = []
    for kind in b4["kinds"]:
        k = ph["kinds"][kind]
        ratio = k.get("shipped/custom_plan", {}).get("p95")
        row = [f"`{kind}`", _ratio(ratio), str(k["result"]["shipped"])]
        if "plans" in ph:
            row.append(_access(ph["plans"].get(kind, {})))
        rows.append(row)
    extra = f", eviction: {ph['method']}" if "method" in ph else ""
    lines = [f"*{phase}* — {ph['rounds']} rounds, {_num(ph['wall_s'])} s{extra}:", ""]
    header = ["kind", "p95 shipped/custom", "items"]
    if "plans" in ph:
        header.append("history tables read (EXPLAIN ANALYZE, custom plan)")
    return lines + _table(header, rows)


_B4_PHASES = ("ranked", "ranked_cold", "no_btree_gin")


def _b4_cell(ph: dict[str, Any], kind: str, variant: str, goal: float) -> str:
    """p50 / p95 ✓/✗; a call that answered an error code (``storage_unavailable``…) is ✗
    whatever its time: a fast failure is no result."""
    result = ph["kinds"][kind]["result"].get(variant)
    if isinstance(result, str) and not result[:1].isdigit():
        st = ph["kinds"][kind][variant]
        return f"{_num(st['p50'])} / {_num(st['p95'])} ✗ (error: {result})"
    return _cell(ph["kinds"][kind][variant], goal, ph["rounds"])


def _md_b4_stage(stage: dict[str, Any]) -> list[str]:
    t = stage.get("targets", {})
    parts = [
        f"**Stage {stage['total_messages']:,} rows**: loaded in {_num(stage['load_s'])} s "
        f"({_num(stage['load_rows_per_s'])} rows/s, search trigger and indexes maintained)"
    ]
    if stage.get("settle_s") is not None:
        parts.append(f"`VACUUM ANALYZE message_search` {_num(stage['settle_s'])} s")
    index = stage.get("search_index")
    if index:
        parts.append(
            f"`{index['name']}` built in {_num(index['build_s'])} s "
            f"(maintenance_work_mem {index['maintenance_work_mem']}), "
            f"{(index['index_bytes'] or 0) / 2**20:.1f} MiB"
        )
    fallback = stage.get("fallback_index")
    if fallback:
        parts.append(
            f"without btree_gin: `{fallback['definition']}` built in "
            f"{_num(fallback['build_s'])} s, {(fallback['index_bytes'] or 0) / 2**20:.1f} MiB"
        )
    sizes = [
        f"{rel} {stage[f'{rel}_bytes'] / 2**20:.1f} MiB"
        for rel in ("messages", "message_search")
        if stage.get(f"{rel}_bytes") is not None
    ]
    if sizes:
        parts.append("tables: " + ", ".join(sizes))
    probe = stage.get("copy_probe") or {}
    if probe.get("rows_per_s"):
        rates = probe["rows_per_s"]
        parts.append(
            f"COPY probe ({probe['rows']:,} rows, best of {probe['reps']}): "
            f"{_num(rates['with_trigger'])} rows/s with the search trigger, "
            f"{_num(rates['without_trigger'])} without ({_ratio(probe['with/without'])} the time)"
        )
    if t:
        parts.append(
            f"`multi_en_dates`: after `{t['after']}`, before `{t['before']}` "
            f"({_num(t['heavy_messages_in_window'])} of the heavy user's messages, whose "
            f"timeline runs {t['heavy_first_at']} – {t['heavy_last_at']}); `multi_en_thread`: "
            f"a thread of {_num(t['thread_messages'])} messages"
        )
    return ["; ".join(parts) + ".", ""]


def _md_b4(b4: dict[str, Any]) -> list[str]:
    goal = b4["goal_p95_ms"]
    shape = b4.get("shape", {})
    searches = b4.get("searches", {})
    filters = {"dates": " + after/before", "thread": " + thread_id"}
    lines = [
        "## B4 — history at scale",
        "",
        f"Heavy user: {shape.get('heavy', '10 %')}; {_num(shape.get('users'))} users; "
        f"searches through `LookbackService` with limit {_num(b4.get('limit'))}. "
        f"`message_search` on this server: {_num(b4.get('search_table'))}. Queries: "
        + ", ".join(
            f"`{k}`=`{v['query']}`{filters.get(v.get('filter') or '', '')}"
            for k, v in searches.items()
        )
        + f". ✓/✗ = p95 ≤ {goal:.0f} ms; (n=…) marks a variant retired early after its time "
        "budget. `ranked`: the product's index as migrated; `ranked_cold`: every sample right "
        "after evicting the history tables from PostgreSQL's and the OS's caches "
        "(benchmarks/_b4_cold.py); `no_btree_gin`: the migration's index for a server without "
        "btree_gin. Items: hits returned, and for needle queries how many of the heavy user's "
        "three needle messages are among them.",
        "",
    ]
    phases = [p for p in _B4_PHASES if any(p in s["phases"] for s in b4["stages"])]
    header = ["kind"] + [
        f"{s['total_messages']:,} rows (heavy {s['heavy_messages']:,})" for s in b4["stages"]
    ]
    for phase in phases:
        variants = ("shipped",) if phase.endswith("_cold") else ("shipped", "custom_plan")
        for variant in variants:
            rows = []
            for kind in b4["kinds"]:
                row = [f"`{kind}`"]
                for stage in b4["stages"]:
                    ph = stage["phases"].get(phase)
                    row.append("–" if ph is None else _b4_cell(ph, kind, variant, goal))
                rows.append(row)
            lines += [f"**p50 / p95 ms — phase: `{phase}`, engine: `{variant}`**", ""]
            lines += _table(header, rows)
    for stage in b4["stages"]:
        lines += _md_b4_stage(stage)
        for phase, ph in stage["phases"].items():
            lines += _md_b4_plans(b4, phase, ph)
    return lines


def _md_b5(b5: dict[str, Any]) -> list[str]:
    lines = [
        "## B5 — bytes of model input per run vs. past messages",
        "",
        f"Current thread: {b5['current_thread']}; MEMORY.md {b5['memory_file_bytes']:,} B. "
        "Bytes of OpenAI-style JSON (messages + tool schemas).",
        "",
    ]
    rows = []
    for row in b5["sizes"]:
        b, r, p = row["bytes"], row["ratios"], row["parts"]
        rows.append(
            [
                _num(row["past_messages"]),
                _num(row["visible_past_messages"]),
                _num(b["ours"]),
                _num(b["ours_empty_memory"]),
                f"{_num(b['ours_with_lookback'])} "
                f"(search {p['search_response']:,} + read {p['read_response']:,})",
                _num(b["preload_all"]),
                _ratio(r["preload_all/ours"]),
                _ratio(r["preload_all/ours_with_lookback"]),
            ]
        )
    lines += _table(
        [
            "past messages",
            "visible",
            "ours B",
            "ours, no memory yet B",
            "ours + 1 search + 1 read B",
            "preload all B",
            "preload/ours",
            "preload/(ours+lookback)",
        ],
        rows,
    )
    parts = b5["sizes"][0]["parts"]
    lines += [
        f"Parts of ours: system prompt {parts['system_prompt']:,} B, memory block "
        f"{parts['memory_block']:,} B, current message {parts['current_message']:,} B, workspace "
        f"tool schemas {parts['workspace_tool_schemas']:,} B, memory tool schemas "
        f"{parts['memory_tool_schemas']:,} B.",
        "",
    ]
    return lines


def _md_b6(b6: dict[str, Any]) -> list[str]:
    goals, checks, shape = b6["goals"], b6["checks"], b6["run_shape"]
    lines = [
        "## B6 — run overhead and idle cost (offline model, a real `yuxi serve`)",
        "",
        f"{b6['rounds']} interleaved rounds (+{b6['warmup']} warm-up). `ours`: POST a run, then "
        "follow its SSE stream; `ours_wait`: POST `?wait=true`; `floor`: the same run's own "
        f"database work timed bare with psycopg ({shape['events']} events, of which "
        f"{shape['token_events']} token; {shape['checkpoints']} checkpoints and "
        f"{shape['checkpoint_write_batches']} checkpoint write batches, each its own "
        "transaction, plus submit, claim and finish).",
        "",
    ]
    lines += _table(
        ["variant", "n", "p50 ms", "p95 ms", "p99 ms", "mean ms"],
        _stats_rows(b6["stats_ms"], list(b6["stats_ms"])),
    )
    lines += _table(["ratio", "p50", "p95", "p99"], _ratio_rows(b6["ratios"]))
    first_ok, done_ok = checks["first_token_ratio_ok"], checks["completed_ratio_ok"]
    lines += [
        f"Goal ≤ {goals['ratio_p50']:g}× the floor at p50: first token "
        f"{'✓' if first_ok else '✗'}, completed {'✓' if done_ok else '✗'}.",
        "",
        "Where the `ours` runs spent their time (database clock):",
        "",
    ]
    lines += _table(
        ["phase", "n", "p50 ms", "p95 ms", "p99 ms", "mean ms"],
        _stats_rows(b6["phases_ms"], list(b6["phases_ms"])),
    )
    lines += [
        f"Idle server: database transactions/s over {b6['idle_window_s']:g} s windows "
        "(`pg_stat_database`, the sampler's own taken out; a window in which autovacuum "
        "worked here is measured again), by open SSE streams:",
        "",
    ]
    lines += _table(
        [
            "open streams",
            "transactions",
            "window s",
            "per s",
            "windows (autovacuum in the last)",
            f"≤ {goals['idle_tps']:g}/s",
        ],
        [
            [
                _num(int(count)),
                _num(v["transactions"]),
                _num(v["window_s"], 1),
                _num(v["per_s"], 2),
                f"{v.get('windows', 1)} ({v.get('autovacuum_tables', 0)})",
                "✓" if v["per_s"] <= goals["idle_tps"] else "✗",
            ]
            for count, v in b6["idle"].items()
        ],
    )
    return lines


def write_markdown(report: dict[str, Any], out: Path) -> Path:
    meta = report["meta"]
    db, machine = meta["db"], meta["machine"]
    flags = " ".join(meta["argv"]) or "(none)"
    durations = ", ".join(f"{k} {v:.0f} s" for k, v in meta["durations_s"].items())
    lines = [
        "# Yuxi memory benchmarks",
        "",
        f"- run: {meta['started_at']} · mode `{meta['mode']}` · flags `{flags}` "
        f"· total {meta['total_s']:.0f} s ({durations})",
        f"- machine: {machine['cpus']} CPUs, {machine['platform']}, Python {machine['python']}",
        f"- PostgreSQL: {db['server_kind']} {db['server_version']} "
        f"(pg_trgm available: {_num(db['pg_trgm_available'])}, ctype {db.get('datctype')}, "
        f"synchronous_commit {db['settings'].get('synchronous_commit')}, "
        f"shared_buffers {db['settings'].get('shared_buffers')})",
        f"- workspaces on: {db['workspace_filesystem']}",
        "- every latency is measured around one awaited call; percentiles are computed from the "
        "raw samples (linear interpolation); variants are interleaved, each round in a new "
        "seeded order (so no variant always runs right after the same other one).",
        "",
    ]
    sections = report.get("results", {})
    if "b1" in sections:
        lines += _md_b1(sections["b1"])
    if "b2" in sections:
        lines += _md_b2(sections["b2"])
    if "b3" in sections:
        lines += _md_b3(sections["b3"])
    if "b4" in sections:
        lines += _md_b4(sections["b4"])
    if "b5" in sections:
        lines += _md_b5(sections["b5"])
    if "b6" in sections:
        lines += _md_b6(sections["b6"])
    if "b7" in sections:
        lines += md_b7(sections["b7"])
    if "b8" in sections:
        lines += md_b8(sections["b8"])
    errors = report.get("errors") or {}
    if errors:
        lines += ["## Errors", ""] + [f"- {k}: `{v}`" for k, v in errors.items()] + [""]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
