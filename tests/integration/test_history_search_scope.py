"""History search at scale: the bounded strategy returns what the exhaustive search returns.

A planted corpus (two users, hidden rows and threads, mixed case, CJK, a term common for one
user and rare for the other) is searched through the repository and through a reference: the
old exhaustive statement (every visible message, literal ILIKE, newest first). With the
per-user trigram index of migration 0005 and without it (the fallback of a server without
pg_trgm), results are identical wherever the response says ``complete``; where it does not (a
query with no 3 letters/digits in a row), they are exactly the reference over the newest
``SEARCH_RECENT_MESSAGES`` stored messages, and ``searched_messages`` counts the visible ones.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from benchmarks.datagen import message_text
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.bootstrap import Container
from yuxi.db.models import Conversation, Message, User, UserConfig
from yuxi.repositories import _history_queries as q
from yuxi.repositories import conversation_repository
from yuxi.repositories._history_visibility import visible_conversation, visible_message
from yuxi.repositories.conversation_repository import ConversationRepository

INDEX = "ix_messages_uid_content_trgm"
WINDOW = 30
FIRST_PASS = 10
HEAVY, LIGHT, OTHER = "scope_heavy", "scope_light", "scope_other"
QUERIES = (
    # 3+ letters/digits: exhaustive (index where it exists)
    "deploy",
    "DEPLOY",
    "zebra-needle-4711",
    "ZEBRA-NEEDLE",
    "榴莲酥",
    "麒麟犀角",
    "äpfel",
    "ÄPFEL",
    "σοφία",
    "xylophone quartz",
    "100%_done",
    "a_b\\c",
    # no trigram: newest WINDOW stored messages
    "天",
    "犇",
    "k",
    "qz",
    "a b",
    "%",
    "_",
)


@asynccontextmanager
async def tx(container: Container) -> AsyncIterator[AsyncSession]:
    async with container.session_factory() as session, session.begin():
        yield session


async def _plant(container: Container) -> None:
    rng = random.Random(14)
    async with tx(container) as s:
        for uid in (HEAVY, LIGHT, OTHER):
            s.add(User(uid=uid, name=uid))
        await s.flush()
        for uid in (HEAVY, LIGHT, OTHER):
            s.add(UserConfig(uid=uid, enable_memory=True))
        threads: dict[str, list[Conversation]] = {}
        for uid in (HEAVY, LIGHT, OTHER):
            for status in ("active", "active", "archived"):
                conv = Conversation(uid=uid, thread_id=f"{uid}-{status}-{rng.random()}")
                conv.status = status
                s.add(conv)
                threads.setdefault(uid, []).append(conv)
        await s.flush()
        specials = [
            "Zebra-Needle-4711 here",
            "榴莲酥真好吃",
            "Äpfel und Birnen",
            "ΣΟΦΊΑ",
            "100%_done",
        ]
        counts = {HEAVY: 140, LIGHT: WINDOW, OTHER: 80}
        for i in range(max(counts.values())):
            for uid, n in counts.items():
                if i >= n:
                    continue
                content = message_text(rng)
                if uid == HEAVY and i < len(specials):  # the heavy user's oldest: needles
                    content += " " + specials[i]
                elif uid == OTHER and rng.random() < 0.3:  # common for OTHER only
                    content += " 榴莲酥 zebra-needle-4711 äpfel"
                elif rng.random() < 0.05:
                    content += " a_b\\c " + rng.choice(specials)
                role, mtype = rng.choice(
                    [("user", "text")] * 4 + [("assistant", "text")] * 4 + [("tool", "tool_result")]
                )
                conv = rng.choice(threads[uid])
                s.add(
                    Message(
                        conversation_id=conv.id,
                        uid=uid,
                        role=role,
                        message_type=mtype,
                        content=content,
                    )
                )
            await s.flush()


async def _reference(
    s: AsyncSession, uid: str, query: str, limit: int, window: int | None
) -> list[int]:
    """The old exhaustive search (newest visible matches), over the newest ``window`` stored
    messages of ``uid`` when given."""
    stmt = (
        select(Message.id)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(*visible_message(uid), *visible_conversation(uid))
        .where(Message.content.ilike("%" + q.escape_like(query) + "%", escape="\\"))
        .order_by(Message.id.desc())
        .limit(limit)
    )
    if window is not None:
        newest = (
            select(Message.id).where(Message.uid == uid).order_by(Message.id.desc()).limit(window)
        )
        stmt = stmt.where(Message.id.in_(newest))
    return [int(x) for x in (await s.scalars(stmt)).all()]


async def _visible_in_window(s: AsyncSession, uid: str) -> int:
    newest = select(Message.id).where(Message.uid == uid).order_by(Message.id.desc()).limit(WINDOW)
    stmt = (
        select(Message.id)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(*visible_message(uid), *visible_conversation(uid), Message.id.in_(newest))
    )
    return len((await s.scalars(stmt)).all())


async def _has_index(s: AsyncSession) -> bool:
    row = await s.execute(text("SELECT 1 FROM pg_class WHERE relname = :n"), {"n": INDEX})
    return row.first() is not None


@pytest.fixture
async def corpus(container: Container, monkeypatch: pytest.MonkeyPatch) -> Container:
    monkeypatch.setattr(conversation_repository, "SEARCH_RECENT_MESSAGES", WINDOW)
    monkeypatch.setattr(conversation_repository, "SEARCH_FIRST_PASS_MESSAGES", FIRST_PASS)
    await _plant(container)
    return container


@pytest.mark.parametrize("index", ["per_user_trgm", "no_trgm"])
async def test_search_equals_the_exhaustive_search_where_complete(
    corpus: Container, index: str
) -> None:
    async with tx(corpus) as s:
        if index == "no_trgm":
            await s.execute(text(f"DROP INDEX IF EXISTS {INDEX}"))
        elif not await _has_index(s):
            pytest.skip("this server has no pg_trgm/btree_gin: migration 0005 made no index")
    checked = {"complete": 0, "bounded": 0, "nonempty": 0}
    for uid in (HEAVY, LIGHT, OTHER):
        for query in QUERIES:
            for limit in (1, 5, 10):
                async with tx(corpus) as s:
                    result = await ConversationRepository(s).search_messages(uid, query, limit)
                    got = [item["message_id"] for item in result["items"]]
                    if result["complete"]:
                        assert "searched_messages" not in result
                        want = await _reference(s, uid, query, limit, None)
                        checked["complete"] += 1
                    else:
                        # Only queries without a trigram may stop early, and only for a user
                        # with more than WINDOW stored messages.
                        assert q.index_key(query) is None and uid != LIGHT, (uid, query)
                        want = await _reference(s, uid, query, limit, WINDOW)
                        assert result["searched_messages"] == await _visible_in_window(s, uid)
                        checked["bounded"] += 1
                assert got == want, (uid, query, limit, result)
                checked["nonempty"] += bool(got)
    assert checked["complete"] > 0 and checked["bounded"] > 0 and checked["nonempty"] > 20


async def test_a_short_query_is_exact_when_the_history_fits_the_window(
    corpus: Container,
) -> None:
    # LIGHT has exactly WINDOW stored messages: the newest WINDOW are all of them.
    async with tx(corpus) as s:
        result = await ConversationRepository(s).search_messages(LIGHT, "犇", 5)
    assert result == {"items": [], "truncated": False, "complete": True}
    async with tx(corpus) as s:
        conv = (await s.scalars(select(Conversation).where(Conversation.uid == LIGHT))).first()
        assert conv is not None
        s.add(Message(conversation_id=conv.id, uid=LIGHT, role="tool", message_type="tool_result"))
    # WINDOW + 1 stored (the newest one hidden): the oldest is no longer searched, and says so.
    async with tx(corpus) as s:
        result = await ConversationRepository(s).search_messages(LIGHT, "犇", 5)
        visible = await _visible_in_window(s, LIGHT)
    assert result == {
        "items": [],
        "truncated": False,
        "complete": False,
        "searched_messages": visible,
    }
    assert visible < WINDOW


async def test_a_rare_term_of_a_heavy_user_is_found_behind_the_window(corpus: Container) -> None:
    # The needles are in HEAVY's oldest messages, far behind the newest WINDOW.
    async with tx(corpus) as s:
        result = await ConversationRepository(s).search_messages(HEAVY, "zebra-NEEDLE-4711", 5)
        want = await _reference(s, HEAVY, "zebra-NEEDLE-4711", 5, None)
    assert result["complete"] is True
    assert [item["message_id"] for item in result["items"]] == want and want


def test_index_key_is_the_longest_run_of_three_letters_or_digits() -> None:
    assert q.index_key("marmalade-sky") == "marmalade"
    assert q.index_key("a sky is") == "sky"
    assert q.index_key("榴莲酥") == "榴莲酥"
    assert q.index_key("天气 好") is None
    assert q.index_key("a b c") is None
    assert q.index_key("ab_cd") is None  # pg_trgm does not count "_" as a letter
    assert q.index_key("100%_done") == "done"  # the longest run; the first of equals
    assert q.index_key("abc-xyz") == "abc"
    assert q.index_key("x" * 256) == "x" * 256


async def test_case_folds_by_the_collation_and_nothing_is_normalised(corpus: Container) -> None:
    async with tx(corpus) as s:
        conv = (await s.scalars(select(Conversation).where(Conversation.uid == LIGHT))).first()
        assert conv is not None and conv.status == "active"
        for content in ("Deploy ÄPFEL ΣΟΦΊΑ", "ＡＢＣ full width", "cafe\u0301 decomposed"):
            s.add(Message(conversation_id=conv.id, uid=LIGHT, role="user", content=content))
        folds = (await s.execute(text("SELECT 'ÄΣ' ILIKE 'äσ'"))).scalar_one()

    async def found(query: str) -> bool:
        async with tx(corpus) as s:
            result = await ConversationRepository(s).search_messages(LIGHT, query, 10)
        assert result["complete"] is True
        return any(query.lower() in item["content"].lower() for item in result["items"])

    assert await found("dEPLOY äp") is bool(folds)
    assert await found("DEPLOY") and await found("deploy")
    assert await found("ＡＢＣ") and not await found("ABC full")  # no NFKC
    assert not await found("café")  # no NFC: the stored text is decomposed
    if folds:  # the embedded default (builtin C.UTF-8) and libc C.UTF-8 fold every script
        assert await found("äpfel σοφία")
