"""Ranked history search (design.md §6.2): terms, BM25 scores against a reference library,
the windowed corpus of a large history, filters, phrases, and the index kept by triggers.

The reference is ``bm25s`` (method ``lucene``, the same k1 and b) fed with the terms the
database itself produced for each visible message: the test holds the SQL's statistics (the
corpus, document frequencies, lengths) and arithmetic to the library's.
"""

from __future__ import annotations

import math
import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import bm25s
import pytest
from sqlalchemy import text, update

from tests.support.history import new_thread, seed_user, tx
from yuxi import limits
from yuxi.bootstrap import Container
from yuxi.db.models import Message
from yuxi.errors import InvalidArgument, NotFound
from yuxi.limits import SEARCH_MAX_TERMS
from yuxi.repositories.lookback import K1, B, LookbackRepository, SearchRequest
from yuxi.repositories.thread_repository import ThreadRepository
from yuxi.services.lookback import search_response

pytestmark = pytest.mark.pg

EN = (
    "oolong",
    "tea",
    "morning",
    "garden",
    "sister",
    "porto",
    "moved",
    "spring",
    "heater",
    "kitchen",
    "paint",
    "blue",
    "guitar",
    "lesson",
    "friday",
    "budget",
    "coffee",
    "dentist",
)
ZH = ("乌龙茶", "早上", "花园", "姐姐", "搬家", "春天", "暖气", "厨房", "油漆", "蓝色", "吉他")


async def search(container: Container, uid: str, query: str, **kw: Any) -> dict[str, Any]:
    limit = kw.pop("limit", 10)
    async with tx(container) as s:
        found = await LookbackRepository(s).search_messages(
            SearchRequest(uid=uid, query=query, limit=limit, **kw)
        )
    return search_response(found)


async def terms_of(container: Container, value: str, *, query: bool = False) -> list[str]:
    """The terms of ``value`` as a stored message holds them, or (``query``) as a query does."""
    function = "yuxi_query_terms" if query else "yuxi_search_terms"
    async with tx(container) as s:
        row = (await s.execute(text(f"SELECT {function}(:v)"), {"v": value})).scalar_one()
    return list(row)


def sentence(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return " ".join(rng.choices(EN, k=rng.randint(3, 12)))
    return "".join(rng.choices(ZH, k=rng.randint(2, 7))) + "。"


def reference_scores(corpus: dict[int, list[str]], query: list[str]) -> dict[int, float]:
    """bm25s's scores (lucene) over ``corpus`` (id → terms) for ``query`` (terms)."""
    ids = sorted(corpus)
    retriever = bm25s.BM25(method="lucene", k1=K1, b=B)
    retriever.index([corpus[i] for i in ids], show_progress=False)
    vocab = retriever.vocab_dict
    known = [t for t in query if t in vocab]
    if not known:
        return {}
    scores = retriever.get_scores(known)
    return {i: float(x) for i, x in zip(ids, scores, strict=True) if x > 0}


# -- terms ------------------------------------------------------------------------------------


async def test_terms_fold_case_and_width_split_words_and_make_cjk_bigrams(
    container: Container,
) -> None:
    # Latin-script words are Snowball English stems; every word stays a term (no stop words).
    assert await terms_of(container, "I drink Oolong tea, every MORNING!") == [
        "i",
        "drink",
        "oolong",
        "tea",
        "everi",
        "morn",
    ]
    assert await terms_of(container, "She moved; relocated, living") == [
        "she",
        "move",
        "reloc",
        "live",
    ]
    # Full width folds; a word with a letter of another script, or a digit, is not stemmed.
    assert await terms_of(container, "ＡＢＣ full-width ÄÖ ΣΑΣ naïve cafés") == [
        "abc",
        "full",
        "width",
        "äö",
        "σασ",
        "naïv",
        "café",
    ]
    # A stored Han run: its bigrams, then its characters; a lone character is itself.
    assert await terms_of(container, "我喜欢喝乌龙茶。茶") == [
        "我喜",
        "喜欢",
        "欢喝",
        "喝乌",
        "乌龙",
        "龙茶",
        *"我喜欢喝乌龙茶",
        "茶",
    ]
    # A query's run keeps its bigrams only; its lone character stays.
    assert await terms_of(container, "我喜欢喝乌龙茶。茶", query=True) == [
        "我喜",
        "喜欢",
        "欢喝",
        "喝乌",
        "乌龙",
        "龙茶",
        "茶",
    ]
    assert await terms_of(container, "乌龙Oolong茶 カタカナ", query=True) == [
        "乌龙",
        "oolong",
        "茶",
        "カタ",
        "タカ",
        "カナ",
    ]
    assert await terms_of(container, "a_b e-mail 42x walked2") == [
        "a",
        "b",
        "e",
        "mail",
        "42x",
        "walked2",
    ]
    assert await terms_of(container, "x" * 65) == ["x" * 64]
    assert await terms_of(container, "%% -- 😀") == []


async def test_a_single_han_character_is_found_inside_a_longer_run(
    container: Container,
) -> None:
    uid = await seed_user(container)
    _, ids = await new_thread(container, uid, ["我喜欢喝乌龙茶", "今天天气很好", "猫"])
    tea = await search(container, uid, "茶")
    assert [i["message_id"] for i in tea["items"]] == [ids[0]]
    cat = await search(container, uid, "猫")
    assert [i["message_id"] for i in cat["items"]] == [ids[2]]
    # A longer query still ranks by bigrams: "龙茶" is held by the first message only.
    assert [i["message_id"] for i in (await search(container, uid, "龙茶"))["items"]] == [ids[0]]
    # A phrase of one character finds it inside a run too (terms, then the text itself).
    quoted = await search(container, uid, '"茶"')
    assert [i["message_id"] for i in quoted["items"]] == [ids[0]]


async def test_stemming_finds_other_forms_and_phrases_keep_exact_words(
    container: Container,
) -> None:
    uid = await seed_user(container)
    _, ids = await new_thread(
        container,
        uid,
        [
            "My sister relocated to Porto last spring",
            "We are relocating the garden shed",
            "Moving boxes everywhere",
        ],
    )
    found = await search(container, uid, "relocation")
    assert sorted(i["message_id"] for i in found["items"]) == sorted(ids[:2])
    assert [i["message_id"] for i in (await search(container, uid, "moved"))["items"]] == [ids[2]]
    # A quoted phrase matches those exact words only.
    exact = await search(container, uid, '"relocated to Porto"')
    assert [i["message_id"] for i in exact["items"]] == [ids[0]]
    assert (await search(container, uid, '"relocating to Porto"'))["items"] == []


# -- scores against the reference ------------------------------------------------------------


async def test_scores_are_bm25_over_exactly_the_visible_messages(container: Container) -> None:
    rng = random.Random(7)
    alice = await seed_user(container)
    bob = await seed_user(container)
    visible: dict[int, str] = {}
    for _ in range(4):
        contents = [sentence(rng) for _ in range(rng.randint(4, 12))]
        _, ids = await new_thread(container, alice, contents)
        visible.update(zip(ids, contents, strict=True))
    # Hidden places hold the same words many times over: they must not move any statistic.
    heavy = " ".join(["oolong tea garden"] * 20)
    await new_thread(container, alice, [heavy] * 6, status="archived")
    await new_thread(container, bob, [heavy] * 6)
    corpus = {i: await terms_of(container, c) for i, c in visible.items()}
    for query in ("oolong tea", "sister moved porto spring", "乌龙茶 早上", "garden 花园 paint"):
        expected = reference_scores(corpus, await terms_of(container, query, query=True))
        result = await search(container, alice, query, limit=10)
        best = sorted(expected.items(), key=lambda kv: (-kv[1], -kv[0]))[:10]
        got = [(i["message_id"], i["score"]) for i in result["items"]]
        assert [i for i, _ in got] == [i for i, _ in best], query
        for (_, score), (_, ref) in zip(got, best, strict=True):
            assert math.isclose(score, ref, abs_tol=1e-3), (query, score, ref)
        assert result["complete"] is True


async def test_ties_are_newest_first_and_every_hit_says_when_and_where(
    container: Container,
) -> None:
    alice = await seed_user(container)
    conv, ids = await new_thread(container, alice, ["same words here"] * 3, title="tea talk")
    result = await search(container, alice, "words")
    assert [i["message_id"] for i in result["items"]] == list(reversed(ids))
    for rank, item in enumerate(result["items"], start=1):
        assert item["rank"] == rank
        assert item["thread_id"] == conv.thread_id
        assert item["title"] == conv.title
        assert item["created_at"].endswith("Z")
        created = datetime.fromisoformat(item["created_at"].removesuffix("Z") + "+00:00")
        assert abs(created - datetime.now(UTC)) < timedelta(minutes=5)


async def test_a_new_message_is_searchable_in_the_transaction_that_wrote_it(
    container: Container,
) -> None:
    alice = await seed_user(container)
    word = f"fresh{uuid.uuid4().hex[:8]}"
    async with tx(container) as s:
        repo = ThreadRepository(s)
        conv = await repo.create_conversation(alice)
        message = await repo.add_message(conv, role="user", content=f"a {word} one")
        found = search_response(
            await LookbackRepository(s).search_messages(
                SearchRequest(uid=alice, query=word, limit=5)
            )
        )
    assert [i["message_id"] for i in found["items"]] == [message.id]


# -- the windowed corpus of a large history --------------------------------------------------


async def test_a_large_history_with_a_common_term_ranks_the_window_and_every_rare_holder(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "SEARCH_FULL_CORPUS_MESSAGES", 20)
    monkeypatch.setattr(limits, "SEARCH_TERM_HOLDERS", 10)  # 5 a term
    monkeypatch.setattr(limits, "SEARCH_WINDOW_MESSAGES", 8)
    alice = await seed_user(container)
    _, old = await new_thread(container, alice, ["the needle lives here", "common filler"])
    _, rest = await new_thread(container, alice, [f"common words {i}" for i in range(30)])
    result = await search(container, alice, "common needle")
    assert result["complete"] is False
    ids = [i["message_id"] for i in result["items"]]
    assert ids[0] == old[0]  # the rare term's holder, from long ago
    # The corpus: the newest 8 visible messages and the one holder of the rare term.
    window = sorted([*old, *rest])[-8:]
    corpus_ids = sorted({*window, old[0]})
    assert result["searched_messages"] == len(corpus_ids)
    contents = {old[0]: "the needle lives here", old[1]: "common filler"}
    contents.update({m: f"common words {i}" for i, m in enumerate(rest)})
    corpus = {i: await terms_of(container, contents[i]) for i in corpus_ids}
    expected = reference_scores(corpus, await terms_of(container, "common needle", query=True))
    best = sorted(expected.items(), key=lambda kv: (-kv[1], -kv[0]))[:10]
    assert ids == [i for i, _ in best]
    for item, (_, ref) in zip(result["items"], best, strict=True):
        assert math.isclose(item["score"], ref, abs_tol=1e-3)
    # The agent's path names its run (its own messages left out): the same answer here.
    as_a_run = await search(container, alice, "common needle", current_run_id=str(uuid.uuid4()))
    assert [i["message_id"] for i in as_a_run["items"]] == ids
    assert as_a_run["searched_messages"] == result["searched_messages"]
    # A history that is small, or a query of rare terms only, is ranked whole.
    assert (await search(container, alice, "needle"))["complete"] is True


async def test_a_term_absent_from_the_window_but_common_in_the_past_is_counted_common(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newest messages are only a sample: a term they do not hold is counted, and one held
    by more than the bound in older history still makes the search windowed."""
    monkeypatch.setattr(limits, "SEARCH_FULL_CORPUS_MESSAGES", 20)
    monkeypatch.setattr(limits, "SEARCH_TERM_HOLDERS", 10)  # a lone term: 10
    monkeypatch.setattr(limits, "SEARCH_WINDOW_MESSAGES", 8)
    alice = await seed_user(container)
    await new_thread(container, alice, [f"oldtopic talk {i}" for i in range(11)])
    _, recent = await new_thread(container, alice, [f"filler line {i}" for i in range(30)])
    common = await search(container, alice, "oldtopic")
    assert common["complete"] is False  # 11 holders > 10: only the window is ranked
    assert common["items"] == [] and common["searched_messages"] == 8
    # Ten holders are not more than the bound: the whole history is ranked.
    async with tx(container) as s:
        await s.execute(
            text("DELETE FROM messages WHERE uid = :u AND content = 'oldtopic talk 0'"),
            {"u": alice},
        )
    whole = await search(container, alice, "oldtopic")
    assert whole["complete"] is True and len(whole["items"]) == 10
    del recent


async def test_the_sample_calls_a_term_common_only_above_the_bound(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample's rule at its boundary: a term held by ``h`` of the newest 8 of 40 visible
    messages stands for ``h · 40 / 8`` holders. Exactly the bound (10) is not common (its few
    holders are then counted: rare, the whole history ranked); one more sampled holder is."""
    monkeypatch.setattr(limits, "SEARCH_FULL_CORPUS_MESSAGES", 20)
    monkeypatch.setattr(limits, "SEARCH_TERM_HOLDERS", 10)
    monkeypatch.setattr(limits, "SEARCH_WINDOW_MESSAGES", 8)
    for held, complete in ((2, True), (3, False)):
        uid = await seed_user(container)
        await new_thread(container, uid, [f"filler {i}" for i in range(32)])
        newest = ["edgeword here"] * held + [f"later {i}" for i in range(8 - held)]
        await new_thread(container, uid, newest)
        result = await search(container, uid, "edgeword")
        assert result["complete"] is complete, (held, result)
        assert len(result["items"]) == held


async def test_a_long_history_is_ranked_by_the_sampling_rule_under_every_filter(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Randomised: the one statement that ranks a long history (the sample, the probes, the
    corpus, BM25) agrees with the rule of design.md §6.2 written out here, over queries of
    common, rare and absent terms, with and without filters, as the owner and as a run."""
    full, holders, window = 20, 12, 10
    monkeypatch.setattr(limits, "SEARCH_FULL_CORPUS_MESSAGES", full)
    monkeypatch.setattr(limits, "SEARCH_TERM_HOLDERS", holders)
    monkeypatch.setattr(limits, "SEARCH_WINDOW_MESSAGES", window)
    rng = random.Random(11)
    alice = await seed_user(container)
    common, middling, rare = ["tea", "garden"], ["porto", "guitar", "heater"], ["oolong", "乌龙茶"]

    def line() -> str:
        words = rng.choices(common, k=rng.randint(0, 3)) + rng.choices(
            middling, k=rng.randint(0, 1)
        )
        if rng.random() < 0.06:
            words.append(rng.choice(rare))
        return " ".join([*words, "filler"])

    threads: list[Any] = []
    contents: dict[int, str] = {}
    visible: set[int] = set()
    # Two topics only the oldest messages hold: one more than the bound of a lone term (common,
    # though the sample holds none of it), one exactly the bound (rare).
    old_topics = ["oldtopic"] * (holders + 1) + ["pasttopic"] * holders
    for status in ("active", "active", "active", "archived"):
        lines = [line() for _ in range(rng.randint(15, 25))]
        if not threads:
            lines = [f"{topic} {line()}" for topic in old_topics] + lines
        thread, ids = await new_thread(container, alice, lines, status=status)
        threads.append(thread)
        contents.update(zip(ids, lines, strict=True))
        if status == "active":
            visible.update(ids)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    order = list(contents)
    rng.shuffle(order)
    order.sort(key=lambda m: "topic " not in contents[m])  # stable: the old topics first
    when = {m: start + timedelta(minutes=k) for k, m in enumerate(order)}
    async with tx(container) as s:
        for m, moment in when.items():
            await s.execute(update(Message).where(Message.id == m).values(created_at=moment))
        found = await s.execute(
            text("SELECT id, conversation_id FROM messages WHERE id = ANY(:i)"), {"i": list(when)}
        )
        thread_of = {int(r.id): int(r.conversation_id) for r in found}
    stored = {m: await terms_of(container, c) for m, c in contents.items()}
    terms = {m: set(ts) for m, ts in stored.items()}
    newest_first = sorted(contents, key=lambda m: (when[m], m), reverse=True)

    def expected(query: list[str], after: Any, before: Any, conv: int | None) -> Any:
        cap = holders // len(query)

        def within(m: int) -> bool:
            return (
                (after is None or when[m] >= after)
                and (before is None or when[m] < before)
                and (conv is None or thread_of[m] == conv)
            )

        sample = [m for m in newest_first[:window] if m in visible]
        verdicts = []
        for term in query:
            held = sum(1 for m in sample if term in terms[m])
            everywhere = sum(1 for m in visible if term in terms[m])
            verdicts.append(held * len(visible) / max(len(sample), 1) > cap or everywhere > cap)
        if any(verdicts):
            walked = [m for m in newest_first if within(m)][:window]
            rare_terms = {t for t, c in zip(query, verdicts, strict=True) if not c}
            corpus = {m for m in walked if m in visible}
            corpus |= {m for m in visible if within(m) and terms[m] & rare_terms}
            searched: int | None = len(corpus)
        else:
            corpus, searched = set(visible), None
        scores = reference_scores({m: stored[m] for m in corpus}, query)
        best = sorted(
            ((m, x) for m, x in scores.items() if within(m)), key=lambda kv: (-kv[1], -kv[0])
        )
        return best[:10], searched

    queries = [
        "tea",
        "oolong",
        "porto",
        "tea oolong",
        "garden guitar 乌龙茶",
        "absentword",
        "heater porto",
        "tea garden heater",
        "乌龙茶",
        "oldtopic",
        "pasttopic",
        "oldtopic pasttopic",
        "oolong pasttopic",
    ]
    moments = sorted(when.values())
    checked = windowed = 0
    for query_text in queries:
        query = await terms_of(container, query_text, query=True)
        for case_no in range(4):
            after = before = conv = thread_id = None
            if case_no == 1:
                after = moments[len(moments) // 3]
            elif case_no == 2:
                before = moments[len(moments) // 2]
            elif case_no == 3:
                conv, thread_id = threads[1].id, threads[1].thread_id
            best, searched = expected(query, after, before, conv)
            for run in (None, str(uuid.uuid4())):
                result = await search(
                    container,
                    alice,
                    query_text,
                    after=after,
                    before=before,
                    thread_id=thread_id,
                    current_run_id=run,
                )
                got = [(i["message_id"], i["score"]) for i in result["items"]]
                where = (query_text, case_no, run)
                assert [m for m, _ in got] == [m for m, _ in best], where
                for (_, score), (_, ref) in zip(got, best, strict=True):
                    assert math.isclose(score, ref, abs_tol=1e-3), where
                assert result["complete"] is (searched is None), where
                assert result.get("searched_messages") == searched, where
                checked += 1
                windowed += searched is not None
    # Both ways of ranking were exercised.
    assert 0 < windowed < checked


# -- filters ----------------------------------------------------------------------------------


async def test_after_before_and_thread_pick_what_is_returned(container: Container) -> None:
    alice = await seed_user(container)
    first, (a,) = await new_thread(container, alice, ["heater broke"])
    second, (b, c) = await new_thread(container, alice, ["heater fixed", "heater again"])
    times = {
        a: datetime(2026, 3, 10, tzinfo=UTC),
        b: datetime(2026, 4, 1, tzinfo=UTC),
        c: datetime(2026, 4, 1, 0, 0, 1, tzinfo=UTC),
    }
    async with tx(container) as s:
        for message_id, moment in times.items():
            await s.execute(
                update(Message).where(Message.id == message_id).values(created_at=moment)
            )

    async def ids(**kw: Any) -> set[int]:
        return {i["message_id"] for i in (await search(container, alice, "heater", **kw))["items"]}

    april = datetime(2026, 4, 1, tzinfo=UTC)
    assert await ids() == {a, b, c}
    assert await ids(before=april) == {a}  # before is exclusive
    assert await ids(after=april) == {b, c}  # after is inclusive
    assert await ids(after=april, before=april + timedelta(seconds=1)) == {b}
    assert await ids(thread_id=second.thread_id) == {b, c}
    assert await ids(thread_id=first.thread_id, after=april) == set()
    with pytest.raises(NotFound):
        await ids(thread_id="no-such-thread")
    hidden, _ = await new_thread(container, alice, ["heater"], status="archived")
    with pytest.raises(NotFound):
        await ids(thread_id=hidden.thread_id)
    # The hit's time is the message's time, moved by the filters' update above.
    hit = (await search(container, alice, "heater", before=april))["items"][0]
    assert hit["created_at"] == "2026-03-10T00:00:00Z"


async def test_bad_filters_are_tool_errors(container: Container) -> None:
    alice = await seed_user(container)
    await new_thread(container, alice, ["heater"])
    lookback = container.services.lookback

    async def call(**kw: Any) -> Any:
        return await lookback.search_thread_messages(uid=alice, query="heater", **kw)

    for bad in ("2026-13-01", "March 2026", "2026-W10", "20260301", 20260301, "x" * 65):
        with pytest.raises(InvalidArgument):
            await call(after=bad)
        with pytest.raises(InvalidArgument):
            await call(before=bad)
    with pytest.raises(InvalidArgument):
        await call(after="2026-04-01", before="2026-04-01")
    with pytest.raises(InvalidArgument):
        await call(after="2026-05-01", before="2026-04-01")
    for bad_thread in ("", "   ", 7, "t" * 65):
        with pytest.raises(InvalidArgument):
            await call(thread_id=bad_thread)
    with pytest.raises(NotFound):
        await call(thread_id="t" * 64)
    ok = await call(after="2026-01-01", before="2100-01-01T00:00:00+08:00")
    assert len(ok.to_payload()["items"]) == 1
    assert len((await call(after=" ", before="")).to_payload()["items"]) == 1


# -- query forms --------------------------------------------------------------------------------


async def test_a_query_is_any_of_its_terms_a_phrase_is_required(container: Container) -> None:
    alice = await seed_user(container)
    _, (tea, morning, both) = await new_thread(
        container,
        alice,
        ["oolong tea at noon", "every morning a walk", "I drink oolong tea every morning"],
    )
    ids = [
        i["message_id"]
        for i in (await search(container, alice, "tea every morning oolong"))["items"]
    ]
    assert ids[0] == both and set(ids) == {tea, morning, both}
    phrase = await search(container, alice, '"oolong tea" morning')
    assert [i["message_id"] for i in phrase["items"]] == [both, tea]
    typographic = await search(container, alice, "\u201coolong tea\u201d")
    assert {i["message_id"] for i in typographic["items"]} == {tea, both}
    assert (await search(container, alice, '"tea oolong"'))["items"] == []
    with pytest.raises(InvalidArgument):
        await search(container, alice, '"a" "b" "c" "d" "e"')


async def test_terms_beyond_the_limit_are_named_not_searched(container: Container) -> None:
    alice = await seed_user(container)
    words = [f"w{i:02d}" for i in range(SEARCH_MAX_TERMS + 2)]
    _, (first, last) = await new_thread(container, alice, [words[0], words[-1]])
    result = await search(container, alice, " ".join(words))
    assert result["left_out_terms"] == words[SEARCH_MAX_TERMS:]
    assert [i["message_id"] for i in result["items"]] == [first]
    exact = await search(container, alice, " ".join(words[:SEARCH_MAX_TERMS]))
    assert "left_out_terms" not in exact
    del last


# -- the index and its running totals --------------------------------------------------------


async def test_the_index_holds_exactly_the_visible_types_and_its_totals_stay_exact(
    container: Container,
) -> None:
    alice = await seed_user(container)
    async with tx(container) as s:
        repo = ThreadRepository(s)
        conv = await repo.create_conversation(alice)
        kept = [
            await repo.add_message(conv, role=r, content="alpha beta")
            for r in ("user", "assistant")
        ]
        for role, kind in (("tool", "text"), ("system", "text"), ("assistant", "tool_call")):
            await repo.add_message(conv, role=role, content="alpha hidden", message_type=kind)
        extra = await repo.add_message(conv, role="user", content="gamma delta epsilon")
    async with tx(container) as s:
        indexed = (
            await s.execute(
                text("SELECT message_id FROM message_search WHERE conversation_id = :c"),
                {"c": conv.id},
            )
        ).scalars()
        assert sorted(indexed) == sorted([kept[0].id, kept[1].id, extra.id])
        await s.execute(update(Message).where(Message.id == extra.id).values(content="gamma only"))
        await s.execute(update(Message).where(Message.id == kept[0].id).values(metadata_={"x": 1}))
        await s.execute(text("DELETE FROM messages WHERE id = :i"), {"i": kept[1].id})

    async with tx(container) as s:
        totals = (
            await s.execute(
                text(
                    "SELECT searchable_messages, searchable_terms FROM conversations WHERE id = :c"
                ),
                {"c": conv.id},
            )
        ).one()
        actual = (
            await s.execute(
                text(
                    "SELECT count(*), coalesce(sum(cardinality(terms)), 0) FROM message_search "
                    "WHERE conversation_id = :c"
                ),
                {"c": conv.id},
            )
        ).one()
    assert tuple(totals) == tuple(actual) == (2, 4)
    assert [i["message_id"] for i in (await search(container, alice, "gamma"))["items"]] == [
        extra.id
    ]
    assert (await search(container, alice, "epsilon"))["items"] == []
