"""Migration 0012: the stored terms are re-indexed with stemming and single Han characters,
the per-thread running totals stay exact, new messages get the new terms, running it again
changes nothing, and down and up again gives the same index."""

from __future__ import annotations

import psycopg
from alembic import command

from yuxi.db.migrate import alembic_config, downgrade_sync, upgrade_sync

BEFORE = "0010"


def _seed(url: str) -> None:
    """Two users, a thread each: English, Chinese and hidden messages (indexed by 0008's rule)."""
    with psycopg.connect(url) as conn:
        for n, uid in enumerate(("mig_a", "mig_b")):
            conn.execute("INSERT INTO users (uid, name) VALUES (%s, %s)", (uid, uid))
            thread = conn.execute(
                "INSERT INTO conversations (thread_id, uid) VALUES (%s, %s) RETURNING id",
                (f"mig-{n}", uid),
            ).fetchone()
            assert thread is not None
            rows = [
                ("user", "text", "My sister moved to Porto"),
                ("assistant", "text", "乌龙茶 is a fine tea"),
                ("tool", "text", "hidden tool text"),
            ]
            for role, kind, content in rows:
                conn.execute(
                    "INSERT INTO messages (conversation_id, uid, role, message_type, content) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    (thread[0], uid, role, kind, content),
                )
        conn.commit()


def _state(url: str) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    with psycopg.connect(url) as conn:
        indexed = conn.execute(
            "SELECT m.content, s.terms FROM message_search s "
            "JOIN messages m ON m.id = s.message_id ORDER BY s.message_id"
        ).fetchall()
        totals = conn.execute(
            "SELECT c.thread_id, c.searchable_messages, c.searchable_terms, "
            "(SELECT count(*) FROM message_search s WHERE s.conversation_id = c.id), "
            "(SELECT coalesce(sum(cardinality(s.terms)), 0) FROM message_search s "
            " WHERE s.conversation_id = c.id) "
            "FROM conversations c ORDER BY c.id"
        ).fetchall()
    return [tuple(r) for r in indexed], [tuple(r) for r in totals]


STEMMED = ["my", "sister", "move", "to", "porto"]
WITH_CHARACTERS = ["乌龙", "龙茶", "乌", "龙", "茶", "is", "a", "fine", "tea"]


def test_0012_reindexes_existing_messages_keeps_totals_and_runs_twice(
    empty_database_url: str,
) -> None:
    url = empty_database_url
    upgrade_sync(url, BEFORE)
    _seed(url)
    old_indexed, old_totals = _state(url)
    assert old_indexed[0][1] == ["my", "sister", "moved", "to", "porto"]
    assert old_totals[0] == ("mig-0", 2, 11, 2, 11)
    upgrade_sync(url)
    indexed, totals = _state(url)
    assert [terms for _, terms in indexed] == [STEMMED, WITH_CHARACTERS] * 2
    # Three characters more in each thread; the totals follow the rewritten rows exactly.
    assert totals == [("mig-0", 2, 14, 2, 14), ("mig-1", 2, 14, 2, 14)]
    # New messages are indexed with the new rule, and the totals follow.
    with psycopg.connect(url) as conn:
        conn.execute(
            "INSERT INTO messages (conversation_id, uid, role, content) "
            "SELECT id, uid, 'user', 'walking 绿茶' FROM conversations WHERE thread_id = 'mig-0'"
        )
        conn.commit()
    indexed, totals = _state(url)
    assert indexed[-1] == ("walking 绿茶", ["walk", "绿茶", "绿", "茶"])
    assert totals[0] == ("mig-0", 3, 18, 3, 18)
    # The terms index was rebuilt (concurrently), valid, with no leftover of the rebuild.
    with psycopg.connect(url) as conn:
        indexes = conn.execute(
            "SELECT c.relname, i.indisvalid FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname LIKE 'ix_message_search_uid_terms%'"
        ).fetchall()
    assert indexes == [("ix_message_search_uid_terms", True)]
    # Again: nothing changes.
    command.stamp(alembic_config(url), BEFORE)
    upgrade_sync(url)
    assert _state(url) == (indexed, totals)
    # Down: 0008's terms again, totals exact; up again: the same index as before.
    downgrade_sync(url, BEFORE)
    down_indexed, down_totals = _state(url)
    assert down_indexed[0][1] == ["my", "sister", "moved", "to", "porto"]
    assert down_indexed[-1] == ("walking 绿茶", ["walking", "绿茶"])
    assert down_totals[0] == ("mig-0", 3, 13, 3, 13)
    with psycopg.connect(url) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_proc WHERE proname IN ('yuxi_terms', 'yuxi_query_terms')"
        ).fetchone()
    assert left == (0,)
    upgrade_sync(url)
    assert _state(url) == (indexed, totals)
