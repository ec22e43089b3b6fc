"""The benchmark data generator at small scale, on a real PostgreSQL, read back by the tools."""

from __future__ import annotations

import re
from typing import Any

import psycopg
from benchmarks.datagen import CJK_WORDS, EN_WORDS, TERMS, HistoryGenerator, generate

from yuxi.bootstrap import Container

_CJK = re.compile(r"[\u4e00-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]{3,}")


def _scalar(conn: psycopg.Connection, sql: str, *params: object) -> int:
    row = conn.execute(sql, params or None).fetchone()
    assert row is not None
    return int(row[0])


async def test_generate_small_history_is_searchable_and_readable(
    database_url: str, container: Container
) -> None:
    with psycopg.connect(database_url) as conn:
        data = generate(conn, users=5, messages=2000, heavy_user_messages=300, seed=1)
        assert _scalar(conn, "SELECT count(*) FROM users WHERE uid LIKE 'bench\\_%'") == 5
        assert _scalar(conn, "SELECT count(*) FROM user_config WHERE enable_memory") == 5
        assert _scalar(conn, "SELECT count(*) FROM messages") == 2000
        assert _scalar(conn, "SELECT count(*) FROM messages WHERE uid = %s", data.heavy_uid) == 300
        # Ids follow generation order and the heavy user's rows are mixed among the others'.
        heavy_ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM messages WHERE uid = %s ORDER BY id", (data.heavy_uid,)
            )
        ]
        assert heavy_ids[-1] - heavy_ids[0] > 300
        contents = [r[0] for r in conn.execute("SELECT content FROM messages")]
        assert sum(bool(_CJK.search(c)) for c in contents) > 100
        assert sum(bool(_LATIN.search(c)) for c in contents) > 100
        # Hidden kinds exist, so visibility rules are exercised.
        assert _scalar(conn, "SELECT count(*) FROM messages WHERE message_type <> 'text'") > 0
        hidden_threads = (
            "SELECT count(*) FROM conversations c WHERE c.status <> 'active' "
            "OR c.source <> 'chat' OR EXISTS "
            "(SELECT 1 FROM subagent_threads s WHERE s.child_conversation_id = c.id)"
        )
        assert _scalar(conn, hidden_threads) > 0
    assert data.total_messages == 2000 and data.heavy_messages == 300
    assert data.big_thread_id in data.heavy_visible_thread_ids
    assert data.anchor_message_id is not None

    lookback = container.services.lookback

    async def search(uid: str, query: str, limit: int = 5) -> dict[str, Any]:
        found = await lookback.search_thread_messages(uid=uid, query=query, limit=limit)
        return found.to_payload()

    async def read(uid: str, thread_id: str, message_id: int | None = None) -> dict[str, Any]:
        page = await lookback.read_thread_messages(
            uid=uid, thread_id=thread_id, message_id=message_id
        )
        return page.to_payload()

    uid = data.heavy_uid
    for term in ("rare_en", "rare_cjk"):
        found = await search(uid=uid, query=TERMS[term], limit=10)
        assert len(found["items"]) == 3, found  # the three oldest heavy messages
        assert {item["thread_id"] for item in found["items"]} == {data.big_thread_id}
    for term in ("miss_en", "miss_cjk"):
        assert (await search(uid=uid, query=TERMS[term]))["items"] == []
    common = await search(uid=uid, query=TERMS["common_en"], limit=5)
    assert len(common["items"]) == 5
    # Another user's needles are invisible: only the heavy user has them.
    other = data.uids[1]
    assert (await search(uid=other, query=TERMS["rare_en"]))["items"] == []

    latest = await read(uid=uid, thread_id=data.big_thread_id)
    assert 1 <= len(latest["messages"]) <= 20
    anchored = await read(uid=uid, thread_id=data.big_thread_id, message_id=data.anchor_message_id)
    assert data.anchor_message_id in [m["message_id"] for m in anchored["messages"]]


def test_history_grows_in_stages(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        gen = HistoryGenerator(conn, users=4, seed=2, uid_prefix="stage")
        gen.grow(messages=300, heavy_user_messages=30)
        first_max = _scalar(conn, "SELECT max(id) FROM messages")
        gen.grow(messages=700, heavy_user_messages=70)
        assert _scalar(conn, "SELECT count(*) FROM messages") == 1000
        assert _scalar(conn, "SELECT count(*) FROM messages WHERE uid = %s", gen.heavy_uid) == 100
        assert _scalar(conn, "SELECT min(id) FROM messages WHERE id > %s", first_max) > first_max
        data = gen.data()
    assert data.total_messages == 1000 and data.heavy_messages == 100
    assert len(data.uids) == 4


def test_only_heavy_user(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        data = generate(conn, users=1, messages=120, heavy_user_messages=120, uid_prefix="solo")
        assert _scalar(conn, "SELECT count(*) FROM messages WHERE uid = %s", data.heavy_uid) == 120
    assert data.uids == [data.heavy_uid]


def test_multi_term_queries_use_the_vocabulary() -> None:
    """B4's multi-term queries are built from words the generator writes."""
    english = [TERMS["common_en"], *TERMS["common_en_more"].split(), *TERMS["phrase_en"].split()]
    chinese = [TERMS["common_cjk"], *TERMS["common_cjk_more"].split()]
    assert all(word in EN_WORDS for word in english), english
    assert all(word in CJK_WORDS for word in chinese), chinese
    # the needle phrase's words are in no vocabulary: only the needle messages hold them
    assert not set(TERMS["phrase_rare_en"].split()) & set(EN_WORDS)


def test_phrases_occur_where_documented(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        data = generate(conn, users=3, messages=6000, heavy_user_messages=3000, seed=3)
        phrase = _scalar(
            conn, "SELECT count(*) FROM messages WHERE content ILIKE %s", f"%{TERMS['phrase_en']}%"
        )
        rare = _scalar(
            conn,
            "SELECT count(*) FROM messages WHERE uid = %s AND content LIKE %s",
            data.heavy_uid,
            f"%{TERMS['phrase_rare_en']}%",
        )
    assert 0 < phrase < 60  # by chance: about 1 message in 1,500
    assert rare == 3  # the needles
