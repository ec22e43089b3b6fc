"""Migration 0006 and the read plan it exists for: one thread's newest messages are read by
walking ``(conversation_id, id)`` and stopping, not by fetching and sorting the whole thread."""

from __future__ import annotations

import psycopg
from alembic import command

from tests.support.plans import explain, plan_nodes
from yuxi.db.migrate import alembic_config, downgrade_sync, upgrade_sync
from yuxi.repositories.lookback import statements

STATISTICS = "st_messages_conversation_id_uid"
HEAVY = "plan_heavy"
THREAD_MESSAGES = 3000
OTHER_USERS = 60
OTHER_MESSAGES = 300_000


def _statistics(url: str) -> list[tuple[str, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT s.stxname, array_to_string(s.stxkind, '') FROM pg_statistic_ext s "
            "WHERE s.stxrelid = 'messages'::regclass"
        ).fetchall()
    return [(str(name), str(kind)) for name, kind in rows]


def test_0006_creates_the_statistics_and_runs_twice(empty_database_url: str) -> None:
    url = empty_database_url
    upgrade_sync(url, "0005")
    assert _statistics(url) == []
    upgrade_sync(url)
    assert _statistics(url) == [(STATISTICS, "f")]  # f: functional dependencies
    command.stamp(alembic_config(url), "0005")
    upgrade_sync(url)  # again: harmless
    assert _statistics(url) == [(STATISTICS, "f")]
    downgrade_sync(url, "0005")
    assert _statistics(url) == []


def _seed(url: str) -> int:
    """One user owning 1 % of the table, with one long thread; returns the thread's id."""
    with psycopg.connect(url) as conn:
        uids = [HEAVY, *(f"plan_other_{n}" for n in range(OTHER_USERS))]
        for uid in uids:
            conn.execute("INSERT INTO users (uid, name) VALUES (%s, %s)", (uid, uid))
        thread = conn.execute(
            "INSERT INTO conversations (thread_id, uid) VALUES ('plan-long', %s) RETURNING id",
            (HEAVY,),
        ).fetchone()
        assert thread is not None
        conn.execute(
            "INSERT INTO conversations (thread_id, uid) "
            "SELECT 'plan-other-' || n, 'plan_other_' || n FROM generate_series(0, %s) n",
            (OTHER_USERS - 1,),
        )
        # Interleaved as in a shared table: every 101st row is the long thread's.
        conn.execute(
            """
            INSERT INTO messages (conversation_id, uid, role, content)
            SELECT CASE WHEN n %% 101 = 0 THEN %(thread)s ELSE c.id END,
                   CASE WHEN n %% 101 = 0 THEN %(heavy)s ELSE c.uid END,
                   CASE WHEN n %% 2 = 0 THEN 'user' ELSE 'assistant' END,
                   'message ' || n
            FROM generate_series(1, %(rows)s) n
            JOIN conversations c ON c.thread_id = 'plan-other-' || (n %% %(others)s)
            """,
            {
                "thread": thread[0],
                "heavy": HEAVY,
                "rows": THREAD_MESSAGES * 101,
                "others": OTHER_USERS,
            },
        )
        conn.execute("ANALYZE")
        conn.commit()
        return int(thread[0])


def test_a_thread_read_walks_the_thread_index_and_stops(database_url: str) -> None:
    thread = _seed(database_url)
    with psycopg.connect(database_url) as conn:
        middle = conn.execute(
            "SELECT id FROM messages WHERE conversation_id = %s ORDER BY id OFFSET %s LIMIT 1",
            (thread, THREAD_MESSAGES // 2),
        ).fetchone()
    assert middle is not None
    for name in ("latest", "before", "after"):
        statement, params = statements.thread_window(
            name, HEAVY, thread, anchor_id=middle[0], limit=19
        )
        nodes = plan_nodes(explain(database_url, statement, params))
        kinds = [node["Node Type"] for node in nodes]
        assert "Sort" not in kinds, (name, kinds)
        scans = [n for n in nodes if n.get("Relation Name") == "messages"]
        assert [n["Node Type"] for n in scans] == ["Index Scan"], (name, kinds)
        assert scans[0]["Index Name"] == "ix_messages_conversation_id_id", (name, scans)
