"""B7's section of ``report.md`` (called from :mod:`benchmarks.report`)."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["md_b7"]

_LABELS = {
    "product": "product",
    "bm25s_default": "bm25s default",
    "bm25s_terms": "bm25s terms",
    "bm25s_terms_stem": "bm25s terms + stem",
    "literal": "literal (today)",
}


def _pct(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{100 * value:.0f}"


def _cell(by_k: dict[str, float], ks: list[int]) -> str:
    return " / ".join(_pct(by_k[str(k)]) for k in ks)


def _table(b7: dict[str, Any], level: str, rows: list[dict[str, Any]]) -> list[str]:
    ks = b7["ks"]
    header = ["category", "lang", "n"] + [_LABELS.get(s, s) for s in b7["systems"]]
    header.append("product ≥ best BM25")
    beats = level == "context"
    if beats:
        header.append("product > best BM25 hits at 5")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        cells = [row["category"], row["lang"], str(row["n"])]
        cells += [_cell(row[level][s], ks) for s in b7["systems"]]
        cells.append("✓" if row["product_ge_best_bm25"][level] else "✗")
        if beats:
            cells.append("✓" if row.get("product_context_beats_bm25_at_5") else "✗")
        if row["category"] == "all":
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def md_b7(b7: dict[str, Any]) -> list[str]:
    corpus, lat, filters = b7["corpus"], b7["latency_ms"], b7["product_date_filters"]
    ks = " / ".join(f"R@{k}" for k in b7["ks"])
    dated = (
        f"passed to the product ({filters['dated_calls_with_dates']} of "
        f"{filters['dated_questions']} dated questions)"
        if filters["signature_has_after_before"]
        else "**not** passed to the product: its `search_thread_messages` has no "
        "`after`/`before` yet, so it was called without them"
    )
    lines = [
        "## B7 — recall quality of the history search",
        "",
        f"Seeded corpus (seed {corpus['seed']}): {corpus['users']['en']} English and "
        f"{corpus['users']['zh']} Chinese users, {corpus['threads']:,} threads, "
        f"{corpus['messages']:,} messages over 18 months; {corpus['questions']} questions, each "
        "labelled with the messages and threads that answer it (`benchmarks/b7/corpus.py`). "
        "Queries are the questions' content words; temporal ones add `after`/`before`. "
        "Systems, same user, same visible messages: the product's `search_thread_messages` "
        "(limit 10); BM25 by `bm25s` with its default tokenizer, with words + CJK bigrams "
        "(`terms`) and with those words' Snowball English stems (`terms + stem`, PyStemmer), "
        "the same date filter applied to their candidates; the literal ILIKE substring search "
        f"of stop 23 (newest first, no dates). Dates: {dated}.",
        "",
        f"Cells: {ks} in %. ✓ = the product's recall ≥ the better BM25 at every k.",
        "",
        "**Thread level** (a thread that answers is among the top k hits' threads)",
        "",
    ]
    lines += _table(b7, "thread", b7["rows"])
    lines += ["**Message level** (an answering message is among the top k)", ""]
    lines += _table(b7, "message", b7["rows"])
    lines += [
        "**Context level** (an answering message is among the top k hits or the message "
        "before or after one of them in its thread: the product returns these neighbours with "
        "every hit; for BM25 and the literal search they are taken from the same visible "
        "messages). The last column compares the product's context recall at 5 with the best "
        "BM25's *message* recall at 5: what a model reads in the product's top 5 against a "
        "plain list of BM25 hits.",
        "",
    ]
    lines += _table(b7, "context", b7["rows"])
    multi = [r for r in b7["rows"] if r["category"] == "multi"]
    if multi:
        lines += ["**Two-part stories, every answering message in the top k**", ""]
        lines += _table(b7, "all", multi)
    errors = b7.get("product_errors") or {}
    lines += [
        f"Product latency per query ({lat['n']} queries, sequential, warm): p50 "
        f"{lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms, p99 {lat['p99']:.1f} ms"
        + (f"; errors: {errors}" if errors else "")
        + f". Corpus built in {corpus['build_s']:.2f} s, loaded in {corpus['load_s']:.2f} s; "
        f"BM25 indexes in {corpus['bm25_index_s']:.2f} s. Fingerprint "
        f"`{corpus['fingerprint'][:16]}`.",
        "",
    ]
    examples = b7.get("examples") or []
    if examples:
        lines += ["Examples of questions and their labels:", ""]
        for ex in examples:
            dates = ""
            if ex["after"] or ex["before"]:
                dates = f", after `{ex['after'] or '–'}`, before `{ex['before'] or '–'}`"
            answers = " ‖ ".join(ex["answers"])
            lines.append(
                f"- {ex['lang']} {ex['category']}: {ex['question']} → query `{ex['query']}`"
                f"{dates} → answer: {answers}"
            )
        lines.append("")
    return lines
