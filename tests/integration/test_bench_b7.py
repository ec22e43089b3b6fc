"""B7 on a small corpus in the test database: the report's structure, the labels against the
rows that were loaded, and the BM25 baselines on trivially exact queries."""

from __future__ import annotations

import psycopg
from benchmarks import report
from benchmarks.b7.bm25 import TOKENIZERS, Bm25Index
from benchmarks.b7.corpus import CATEGORIES, build_corpus
from benchmarks.b7.load import load, visible
from benchmarks.b7_recall import KS, SYSTEMS, run_b7
from benchmarks.env import BenchEnv

from tests.integration.test_bench_smoke import env  # noqa: F401  (the fixture)


async def test_b7_report_structure(env: BenchEnv) -> None:  # noqa: F811
    b7 = await run_b7(env, users=2, messages=(150, 200), seed=5, warmup=1, uid_prefix="b7t")
    n = b7["corpus"]["questions"]
    assert n == len(b7["per_question"]) > 0
    assert b7["latency_ms"]["n"] == n and b7["latency_ms"]["p50"] > 0
    assert b7["product_errors"] == {}
    keys = [(row["category"], row["lang"]) for row in b7["rows"]]
    expected = [(c, lang) for c in CATEGORIES for lang in ("en", "zh")]
    assert keys == [*expected, ("all", "en"), ("all", "zh"), ("all", "all")]
    for row in b7["rows"]:
        for level in ("thread", "message", "context", "all"):
            assert set(row[level]) == set(SYSTEMS)
            for system in SYSTEMS:
                values = [row[level][system][str(k)] for k in KS]
                assert all(0 <= v <= 1 for v in values) and values == sorted(values)
            assert isinstance(row["product_ge_best_bm25"][level], bool)
        assert isinstance(row["product_context_beats_bm25_at_5"], bool)
        # thread level is never below message level; context never below message
        for system in SYSTEMS:
            assert row["thread"][system]["10"] >= row["message"][system]["10"]
            for k in KS:
                assert row["context"][system][str(k)] >= row["message"][system][str(k)]
    overall = b7["rows"][-1]
    assert overall["n"] == n
    assert overall["thread"]["bm25s_terms"]["10"] > 0.5  # the baseline finds most answers
    md = report.write_markdown(
        {
            "meta": {
                "started_at": "now",
                "mode": "quick",
                "argv": [],
                "total_s": 1.0,
                "durations_s": {"B7": 1.0},
                "machine": {"cpus": 1, "platform": "?", "python": "3"},
                "db": env.info,
            },
            "results": {"b7": b7},
            "errors": {},
        },
        env.tmp_root,
    ).read_text("utf-8")
    assert "## B7" in md and "product ≥ best BM25" in md and "bm25s terms" in md
    assert md.count("| single | en |") == 3  # thread, message and context level tables
    assert "bm25s terms + stem" in md


async def test_b7_labels_match_the_loaded_rows_and_bm25_finds_exact_queries(
    env: BenchEnv,  # noqa: F811
) -> None:
    corpus = build_corpus(seed=9, users=2, messages=(150, 200), uid_prefix="b7l")
    with psycopg.connect(env.database_url) as conn:
        loaded = load(conn, corpus)
        docs = {uid: visible(conn, uid) for uid in corpus.user_langs}
        for q in corpus.questions:
            for key in q.answer_messages:
                row = conn.execute(
                    "SELECT m.uid, m.role, m.content, c.thread_id FROM messages m "
                    "JOIN conversations c ON c.id = m.conversation_id WHERE m.id = %s",
                    (loaded.message_id(key),),
                ).fetchone()
                assert row is not None, q
                uid, role, content, thread_id = row
                # A reply question's answer is the assistant's reply; every other one the user's.
                expected_role = "assistant" if q.category == "reply" else "user"
                assert uid == q.uid and role == expected_role and thread_id in q.answer_threads
                assert any(w.lower() in content.lower() for w in q.answer_words), (q, content)
    for name in TOKENIZERS:
        indexes = {uid: Bm25Index(rows, name) for uid, rows in docs.items()}
        for q in corpus.questions[::7]:
            target = loaded.message_id(q.answer_messages[0])
            text = corpus.messages[q.answer_messages[0]].content
            hits = indexes[q.uid].search(text, after=q.after, before=q.before)
            assert hits and hits[0][0] == target, (name, q.qid, text, hits[:3])
