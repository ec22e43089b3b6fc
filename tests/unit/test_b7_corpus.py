"""B7's corpus generator: deterministic in its seed, and its labels say what they claim."""

from __future__ import annotations

import importlib
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

import pytest
from benchmarks.b7.corpus import CATEGORIES, LANGUAGES, Corpus, build_corpus, shared_fraction
from benchmarks.b7.en import ENGLISH
from benchmarks.b7.replies import reply_clashes
from benchmarks.b7.terms import is_cjk, terms
from benchmarks.b7.zh import CHINESE


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
        role = "assistant" if q.category == "reply" else "user"
        assert answers and all(m.uid == q.uid and m.role == role for m in answers), q
        assert {threads[m.thread].thread_id for m in answers} == set(q.answer_threads)
        for m in answers:
            assert any(w.lower() in m.content.lower() for w in q.answer_words), (q, m.content)
        if q.category == "multi":
            assert len(set(q.answer_threads)) == 2
        if q.category in ("single", "paraphrase", "reply"):
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
        if q.category not in ("single", "paraphrase", "reply"):
            continue
        holders = {
            m.key
            for m in corpus.messages
            if m.uid == q.uid and any(w in m.content for w in q.answer_words)
        }
        assert holders == set(q.answer_messages), q


_stemmer: Any = importlib.import_module("Stemmer").Stemmer("english")


def _product_terms(text: str, *, stored: bool) -> set[str]:
    """The product's terms (migration 0012) as B7's terms: Latin words by their Snowball English
    stem; a stored message also holds every single CJK character of its runs."""
    out = {_stemmer.stemWord(t) if t.isascii() and t.isalpha() else t for t in terms(text)}
    return out | {ch for ch in text if is_cjk(ch)} if stored else out


def test_reply_labels_are_the_assistants_answer_right_after_the_ask(corpus: Corpus) -> None:
    by_thread: dict[int, list[int]] = {}
    for m in corpus.messages:
        by_thread.setdefault(m.thread, []).append(m.key)
    replies = [q for q in corpus.questions if q.category == "reply"]
    specs = {lang: {s.key for s in LANGUAGES[lang].replies} for lang in ("en", "zh")}
    for lang in ("en", "zh"):  # every spec, asked twice for every user of the language
        users = [u for u, code in corpus.user_langs.items() if code == lang]
        per_user = Counter((q.uid, q.spec) for q in replies if q.lang == lang)
        assert per_user == {(u, s): 2 for u in users for s in specs[lang]}
    for q in replies:
        (key,) = q.answer_messages
        label = corpus.messages[key]
        thread = by_thread[label.thread]
        at = thread.index(key)
        assert at > 0 and label.role == "assistant", q
        ask = corpus.messages[thread[at - 1]]
        assert ask.role == "user" and ask.uid == q.uid and ask.thread == label.thread, q
        assert label.created_at - ask.created_at <= timedelta(minutes=6), q
        assert not any(w.lower() in ask.content.lower() for w in q.answer_words), q
        # the query reaches the ask by its words, and the reply only as the ask's neighbour
        query = _product_terms(q.query, stored=False)
        assert query & _product_terms(ask.content, stored=True), q
        assert not query & _product_terms(label.content, stored=True), (q, label.content)
        assert not set(terms(q.query)) & set(terms(label.content)), q
        if q.lang == "en":
            words = q.query.split()
            assert shared_fraction(words, ask.content) > 0
            assert shared_fraction(words, label.content) == 0


def test_reply_clashes_sees_stems_characters_and_run_together_bigrams() -> None:
    assert reply_clashes(["name", "beagle"], "How about Pickle?") == []
    assert reply_clashes(["suggest", "beagle"], "I suggested Pickle.") == ["suggest"]
    assert reply_clashes(["name"], "I named it Pickle.") == ["name"]
    assert reply_clashes(["名字", "边牧"], "叫汤圆怎么样？") == []
    assert reply_clashes(["起"], "喊起来响亮") == ["起"]  # the product stores single characters
    assert reply_clashes(["汤", "圆"], "叫汤圆吧") == ["汤", "圆", "汤圆"]
    assert reply_clashes(["推", "荐书"], "推荐书单") == ["推", "荐书", "推荐书"]


@pytest.mark.parametrize("lang", [ENGLISH, CHINESE])
def test_a_reply_template_naming_the_question_words_is_refused(
    lang: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = lang.replies[0]
    leaky = spec.replies[0] + " " + spec.questions[0].replace("|", "").format(kind="{kind}")
    bad = replace(spec, replies=(leaky,))
    monkeypatch.setitem(LANGUAGES, lang.code, replace(lang, replies=(bad,)))
    with pytest.raises(ValueError, match=r"\] in the reply"):
        build_corpus(seed=0, users=2, messages=(100, 120))
    leaky_answer = replace(spec, questions=tuple(f"{t} {{pet}}" for t in spec.questions))
    monkeypatch.setitem(LANGUAGES, lang.code, replace(lang, replies=(leaky_answer,)))
    with pytest.raises(ValueError, match="answer in query"):
        build_corpus(seed=0, users=2, messages=(100, 120))


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
