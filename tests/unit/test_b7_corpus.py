"""B7's corpus generator: deterministic in its seed, and its labels say what they claim."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest
from benchmarks.b7.corpus import CATEGORIES, Corpus, build_corpus, shared_fraction
from benchmarks.b7.terms import terms


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return build_corpus(seed=3, users=4, messages=(300, 500))


def test_same_seed_same_corpus_other_seed_other_corpus() -> None:
    a = build_corpus(seed=11, users=2, messages=(200, 300))
    b = build_corpus(seed=11, users=2, messages=(200, 300))
    assert a == b and a.fingerprint() == b.fingerprint()
    c = build_corpus(seed=12, users=2, messages=(200, 300))
    assert c.fingerprint() != a.fingerprint()


def test_shape(corpus: Corpus) -> None:
    assert Counter(corpus.user_langs.values()) == {"en": 2, "zh": 2}
    per_user = Counter(m.uid for m in corpus.messages)
    assert all(n >= 300 for n in per_user.values()), per_user
    assert {(q.category, q.lang) for q in corpus.questions} == {
        (c, lang) for c in CATEGORIES for lang in ("en", "zh")
    }
    # keys are created_at order; roles alternate inside a thread, starting with the user
    assert [m.key for m in corpus.messages] == list(range(len(corpus.messages)))
    assert all(a.created_at <= b.created_at for a, b in pairwise(corpus.messages))
    roles: dict[int, list[str]] = {}
    for m in corpus.messages:
        roles.setdefault(m.thread, []).append(m.role)
    assert all(r == ["user", "assistant"] * (len(r) // 2) for r in roles.values())
    first = datetime(2025, 1, 1, tzinfo=UTC)
    assert all(first <= m.created_at < datetime(2026, 7, 1, tzinfo=UTC) for m in corpus.messages)
    assert len({t.thread_id for t in corpus.threads}) == len(corpus.threads)


def test_labels(corpus: Corpus) -> None:
    threads = {t.index: t for t in corpus.threads}
    for q in corpus.questions:
        answers = [corpus.messages[k] for k in q.answer_messages]
        assert answers and all(m.uid == q.uid and m.role == "user" for m in answers), q
        assert {threads[m.thread].thread_id for m in answers} == set(q.answer_threads)
        for m in answers:
            assert any(w.lower() in m.content.lower() for w in q.answer_words), (q, m.content)
        if q.category == "multi":
            assert len(set(q.answer_threads)) == 2
        if q.category in ("single", "paraphrase"):
            assert not any(w.lower() in q.query.lower() for w in q.answer_words), q
        if q.category == "paraphrase":  # shares some content words, never most
            assert set(terms(q.query)) - set(terms(answers[0].content)), q
            words = q.query.split() if q.lang == "en" else None
            if words:
                assert 0 < shared_fraction(words, answers[0].content) <= 0.5, q


def test_temporal_answers_are_the_only_mentions_inside_their_dates(corpus: Corpus) -> None:
    temporal = [q for q in corpus.questions if q.category == "temporal"]
    assert temporal and all(q.after or q.before for q in temporal)
    for q in temporal:
        low = datetime.fromisoformat(q.after).replace(tzinfo=UTC) if q.after else None
        high = datetime.fromisoformat(q.before).replace(tzinfo=UTC) if q.before else None
        inside = [
            m.key
            for m in corpus.messages
            if m.uid == q.uid
            and q.query in m.content
            and (low is None or m.created_at >= low)
            and (high is None or m.created_at < high)
        ]
        assert inside == list(q.answer_messages), q
        mentions = [m for m in corpus.messages if m.uid == q.uid and q.query in m.content]
        assert len(mentions) == 3 and all(m.role == "user" for m in mentions)
        for m in (corpus.messages[k] for k in q.answer_messages):  # a day inside the dates
            assert low is None or m.created_at - low >= timedelta(days=1)
            assert high is None or high - m.created_at >= timedelta(days=1)


def test_fact_answers_appear_only_in_their_labelled_lines(corpus: Corpus) -> None:
    for q in corpus.questions:
        if q.category not in ("single", "paraphrase"):
            continue
        holders = {
            m.key
            for m in corpus.messages
            if m.uid == q.uid and any(w in m.content for w in q.answer_words)
        }
        assert holders == set(q.answer_messages), q


def test_cjk_queries_come_both_run_together_and_spaced(corpus: Corpus) -> None:
    zh = [q.query for q in corpus.questions if q.lang == "zh" and q.category != "temporal"]
    assert any(" " in query for query in zh) and any(" " not in query for query in zh)


def test_terms_splitter() -> None:
    assert terms("My Sister LENA, 我女儿在杭州 天 ｆｏｏ") == [
        "my",
        "sister",
        "lena",
        "我女",
        "女儿",
        "儿在",
        "在杭",
        "杭州",
        "天",
        "foo",
    ]
