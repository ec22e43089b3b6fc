"""Migration 0008: existing messages are indexed for the ranked search (only the searchable
ones), the per-thread running totals match, new messages are indexed by the trigger, and
running it again changes nothing."""

from __future__ import annotations

import psycopg
from alembic import command

from yuxi.db.migrate import alembic_config, downgrade_sync, upgrade_sync

INDEX = "ix_message_search_uid_terms"


def _seed(url: str) -> None:
    """Two users, a thread each, searchable and hidden messages (at 0007: no index yet)."""
    with psycopg.connect(url) as conn:
        for n, uid in enumerate(("mig_a", "mig_b")):
            conn.execute("INSERT INTO users (uid, name) VALUES (%s, %s)", (uid, uid))
            thread = conn.execute(
                "INSERT INTO conversations (thread_id, uid) VALUES (%s, %s) RETURNING id",
                (f"mig-{n}", uid),
            ).fetchone()
            assert thread is not None
            rows = [
                ("user", "text", "I drink Oolong tea"),
                ("assistant", "text", "乌龙茶 is a fine tea"),
                ("tool", "text", "hidden tool text"),
                ("assistant", "tool_call", "hidden call"),
                ("system", "text", "hidden system"),
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
            "SELECT m.content, s.uid, s.terms FROM message_search s "
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


def test_0008_indexes_existing_messages_and_runs_twice(empty_database_url: str) -> None:
    url = empty_database_url
    upgrade_sync(url, "0007")
    _seed(url)
    upgrade_sync(url, "0008")
    indexed, totals = _state(url)
    assert [(content, uid) for content, uid, _ in indexed] == [
        ("I drink Oolong tea", "mig_a"),
        ("乌龙茶 is a fine tea", "mig_a"),
        ("I drink Oolong tea", "mig_b"),
        ("乌龙茶 is a fine tea", "mig_b"),
    ]
    assert indexed[0][2] == ["i", "drink", "oolong", "tea"]
    assert indexed[1][2] == ["乌龙", "龙茶", "is", "a", "fine", "tea"]
    assert totals == [("mig-0", 2, 10, 2, 10), ("mig-1", 2, 10, 2, 10)]
    # The trigger indexes what is written from now on, and the totals follow.
    with psycopg.connect(url) as conn:
        conn.execute(
            "INSERT INTO messages (conversation_id, uid, role, content) "
            "SELECT id, uid, 'user', 'green tea' FROM conversations WHERE thread_id = 'mig-0'"
        )
        conn.commit()
    indexed, totals = _state(url)
    assert indexed[-1][0] == "green tea"
    assert totals[0] == ("mig-0", 3, 12, 3, 12)
    # Again (an interrupted build's invalid index is rebuilt): nothing changes.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", (INDEX,)
        )
    command.stamp(alembic_config(url), "0007")
    upgrade_sync(url, "0008")
    assert _state(url) == (indexed, totals)
    with psycopg.connect(url) as conn:
        valid = conn.execute(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = %s::regclass", (INDEX,)
        ).fetchone()
    assert valid == (True,)
    # Down and up again: the same index from the messages alone.
    downgrade_sync(url, "0007")
    upgrade_sync(url, "0008")
    assert _state(url) == (indexed, totals)
