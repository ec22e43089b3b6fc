"""B7 — recall quality of the history search: the product against BM25 and today's literal search.

A seeded corpus (:mod:`benchmarks.b7.corpus`: English and Chinese users, ~18 months of threads,
facts stated once early and asked much later, distractors, two-part stories, temporal topics) is
loaded by COPY (:mod:`benchmarks.b7.load`). Every question's query (its content words, plus
``after``/``before`` for temporal ones) goes, for the question's user, to:

* ``product`` — ``services.lookback.search_thread_messages(uid, query, limit=10, after=...,
  before=...)``, timed; on a product without ``after``/``before`` it is called without them
  (``result["product_date_filters"]`` says which ran);
* ``bm25s_default`` / ``bm25s_terms`` — BM25 by the ``bm25s`` library over the same visible
  messages, two tokenizations, the same date filter (:mod:`benchmarks.b7.bm25`);
* ``literal`` — today's search in SQL: the whole query as one ILIKE substring, newest first,
  no dates (the shipped tool has none).

Recall@k (k = 1, 5, 10): *thread* — a thread that answers is among the top k hits' threads;
*message* — an answering message is among the top k; *context* — an answering message is among
the top k or their neighbours (the visible message before and after each hit in its thread: the
product returns them with every hit; for BM25 they are taken from the same visible messages);
*all messages* (two-part stories) — every answering message is. Per category and language, with
"product ≥ best BM25" at every k, and whether the product's context recall beats the best BM25's
message recall (what a model reads in the top k against a plain BM25 list).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from benchmarks.b7.bm25 import TOKENIZERS, Bm25Index
from benchmarks.b7.corpus import CATEGORIES, Corpus, Question, build_corpus
from benchmarks.b7.load import literal_search, load, visible
from benchmarks.env import BenchEnv
from benchmarks.stats import summarize
from yuxi.errors import YuxiError
from yuxi.services.lookback.service import LookbackService

__all__ = ["KS", "SIZES", "SYSTEMS", "recall_rows", "run_b7", "search_product"]

KS = (1, 5, 10)
LIMIT = 10
SYSTEMS = ("product", *TOKENIZERS, "literal")
BASELINES = tuple(TOKENIZERS)
#: Corpus size per mode: users (even English, odd Chinese) and messages per user.
SIZES: dict[str, dict[str, Any]] = {
    "quick": {"users": 2, "messages": (300, 450)},
    "full": {"users": 8, "messages": (300, 800)},
}
Hits = list[tuple[int, str]]  # (message id, thread id), best first
Context = dict[int, list[int]]  # a hit's message id -> its neighbours' message ids
LEVELS = ("thread", "message", "context", "all")


def takes_dates(lookback: LookbackService) -> bool:
    params = inspect.signature(lookback.search_thread_messages).parameters
    return "after" in params and "before" in params


async def search_product(
    lookback: LookbackService, q: Question, *, dates: bool
) -> tuple[Hits, bool, Context]:
    """The product's hits for ``q``, whether the dates were passed (a product without
    ``after``/``before`` raises TypeError for them: then it is asked without), and each hit's
    neighbours as the product returned them."""
    kwargs: dict[str, Any] = {}
    if dates and (q.after or q.before):
        kwargs = {"after": q.after, "before": q.before}
    try:
        result = await lookback.search_thread_messages(
            uid=q.uid, query=q.query, limit=LIMIT, **kwargs
        )
    except TypeError:
        if not kwargs:
            raise
        result = await lookback.search_thread_messages(uid=q.uid, query=q.query, limit=LIMIT)
        kwargs = {}
    items = result.to_payload().get("items", [])
    context = {
        int(i["message_id"]): [
            int(i[side]["message_id"]) for side in ("before", "after") if side in i
        ]
        for i in items
    }
    return [(int(i["message_id"]), str(i["thread_id"])) for i in items], bool(kwargs), context


def _score(
    hits: Hits, answer_ids: set[int], answer_threads: set[str], context: Context
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in KS:
        top = hits[:k]
        ids = {m for m, _ in top}
        near = ids.union(*(context.get(m, ()) for m in ids))
        out[f"thread@{k}"] = any(t in answer_threads for _, t in top)
        out[f"message@{k}"] = bool(ids & answer_ids)
        out[f"context@{k}"] = bool(near & answer_ids)
        out[f"all@{k}"] = answer_ids <= ids
    first_thread = next((r for r, (_, t) in enumerate(hits, 1) if t in answer_threads), None)
    first_message = next((r for r, (m, _) in enumerate(hits, 1) if m in answer_ids), None)
    return {**out, "thread_rank": first_thread, "message_rank": first_message}


def recall_rows(per_question: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Recall per (category, language), per language and overall, for every system."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in per_question:
        for key in (
            (row["category"], row["lang"]),
            ("all", row["lang"]),
            ("all", "all"),
        ):
            groups[key].append(row)
    order = [(c, lang) for c in CATEGORIES for lang in ("en", "zh")]
    order += [("all", "en"), ("all", "zh"), ("all", "all")]
    rows = []
    for key in order:
        members = groups.get(key, [])
        if not members:
            continue
        levels: dict[str, dict[str, dict[str, float]]] = {}
        for level in LEVELS:
            levels[level] = {
                system: {
                    str(k): sum(m["systems"][system][f"{level}@{k}"] for m in members)
                    / len(members)
                    for k in KS
                }
                for system in SYSTEMS
            }
        ok = {
            level: all(
                levels[level]["product"][str(k)]
                >= max(levels[level][b][str(k)] for b in BASELINES) - 1e-12
                for k in KS
            )
            for level in LEVELS
        }
        # What a model reads: the product's hits with their neighbours, against the best
        # library BM25's plain hits, at k = 5 (the tool's default limit).
        beats = levels["context"]["product"]["5"] > max(
            levels["message"][b]["5"] for b in BASELINES
        )
        rows.append(
            {
                "category": key[0],
                "lang": key[1],
                "n": len(members),
                **levels,
                "product_ge_best_bm25": ok,
                "product_context_beats_bm25_at_5": beats,
            }
        )
    return rows


def _examples(corpus: Corpus, per_lang: int = 3) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for lang in ("en", "zh"):
        seen: set[str] = set()
        for q in corpus.questions:
            if q.lang != lang or q.category in seen:
                continue
            seen.add(q.category)
            out.append(
                {
                    "lang": lang,
                    "category": q.category,
                    "question": q.question,
                    "query": q.query,
                    "after": q.after,
                    "before": q.before,
                    "answers": [corpus.messages[k].content for k in q.answer_messages],
                }
            )
            if len(seen) >= per_lang + 1:
                break
    return out


async def run_b7(
    env: BenchEnv,
    *,
    users: int = 8,
    messages: tuple[int, int] = (300, 800),
    seed: int = 0,
    warmup: int = 5,
    uid_prefix: str = "b7",
) -> dict[str, Any]:
    t0 = time.perf_counter()
    corpus = build_corpus(seed=seed, users=users, messages=messages, uid_prefix=uid_prefix)
    build_s = time.perf_counter() - t0

    def load_and_read() -> tuple[Any, dict[str, Any]]:
        with env.sync_connect() as conn:
            loaded = load(conn, corpus)
            return loaded, {uid: visible(conn, uid) for uid in corpus.user_langs}

    t0 = time.perf_counter()
    loaded, docs = await asyncio.to_thread(load_and_read)
    load_s = time.perf_counter() - t0
    visible_ids = {uid: {d.id for d in rows} for uid, rows in docs.items()}
    for q in corpus.questions:  # the labels point at rows the product may show
        missing = {loaded.message_id(k) for k in q.answer_messages} - visible_ids[q.uid]
        if missing:
            raise AssertionError(f"B7 label {q.qid}: messages {sorted(missing)} not visible")
    t0 = time.perf_counter()
    indexes = {
        (uid, name): Bm25Index(rows, name) for uid, rows in docs.items() for name in TOKENIZERS
    }
    index_s = time.perf_counter() - t0

    def literal_all() -> list[Hits]:
        with env.sync_connect() as conn:
            return [literal_search(conn, q.uid, q.query, LIMIT) for q in corpus.questions]

    literal = await asyncio.to_thread(literal_all)
    lookback = env.container.services.lookback
    dates = takes_dates(lookback)
    for q in corpus.questions[:warmup]:
        with contextlib.suppress(YuxiError):
            await search_product(lookback, q, dates=dates)
    latencies: list[float] = []
    errors: dict[str, int] = defaultdict(int)
    dated = 0
    per_question: list[dict[str, Any]] = []
    for q, lit in zip(corpus.questions, literal, strict=True):
        started = time.perf_counter()
        try:
            hits, used, context = await search_product(lookback, q, dates=dates)
        except YuxiError as exc:
            hits, used, context = [], False, {}
            errors[type(exc).__name__] += 1
        latencies.append((time.perf_counter() - started) * 1000)
        dated += used
        answer_ids = {loaded.message_id(k) for k in q.answer_messages}
        threads = set(q.answer_threads)
        systems = {"product": _score(hits, answer_ids, threads, context)}
        for name in TOKENIZERS:
            index = indexes[(q.uid, name)]
            found = index.search(q.query, after=q.after, before=q.before, limit=LIMIT)
            systems[name] = _score(found, answer_ids, threads, index.neighbours)
        literal_context = indexes[(q.uid, BASELINES[0])].neighbours
        systems["literal"] = _score(lit, answer_ids, threads, literal_context)
        per_question.append(
            {
                "qid": q.qid,
                "uid": q.uid,
                "category": q.category,
                "lang": q.lang,
                "spec": q.spec,
                "query": q.query,
                "after": q.after,
                "before": q.before,
                "systems": systems,
            }
        )
    temporal = [q for q in corpus.questions if q.after or q.before]
    counts: dict[str, int] = defaultdict(int)
    for q in corpus.questions:
        counts[f"{q.category}/{q.lang}"] += 1
    return {
        "corpus": {
            "seed": seed,
            "users": {
                lang: sum(v == lang for v in corpus.user_langs.values()) for lang in ("en", "zh")
            },
            "threads": len(corpus.threads),
            "messages": len(corpus.messages),
            "messages_per_user": {uid: len(rows) for uid, rows in docs.items()},
            "questions": len(corpus.questions),
            "questions_by_category": dict(counts),
            "fingerprint": corpus.fingerprint(),
            "build_s": build_s,
            "load_s": load_s,
            "bm25_index_s": index_s,
        },
        "systems": list(SYSTEMS),
        "ks": list(KS),
        "product_date_filters": {
            "signature_has_after_before": dates,
            "dated_questions": len(temporal),
            "dated_calls_with_dates": dated,
        },
        "product_errors": dict(errors),
        "latency_ms": summarize(latencies),
        "rows": recall_rows(per_question),
        "examples": _examples(corpus),
        "per_question": per_question,
    }
