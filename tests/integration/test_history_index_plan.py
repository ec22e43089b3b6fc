"""The indexed history search reads ``messages`` once to find its matches (design §6.2): the
per-user trigram index where the server has it, then only primary-key lookups of the few rows
it returns — never a second scan of the caller's history by ``uid``."""

from __future__ import annotations

import psycopg

from yuxi.repositories import _history_queries as q

from .plans import explain, plan_nodes

HEAVY = "plan_search_heavy"
TERM = "zebra-needle-4711"
TRGM_INDEX = "ix_messages_uid_content_trgm"


def _seed(url: str) -> bool:
    """One user with 20,000 messages (3 with the term), 20 others with 2,000 each (1 % with
    the term); returns whether the per-user trigram index exists."""
    with psycopg.connect(url) as conn:
        users = [HEAVY, *(f"plan_search_{n}" for n in range(20))]
        for n, uid in enumerate(users):
            conn.execute("INSERT INTO users (uid, name) VALUES (%s, %s)", (uid, uid))
            thread = conn.execute(
                "INSERT INTO conversations (thread_id, uid) VALUES (%s, %s) RETURNING id",
                (f"plan-search-{n}", uid),
            ).fetchone()
            assert thread is not None
            rows, every = (20_000, 7_000) if uid == HEAVY else (2_000, 100)
            conn.execute(
                """
                INSERT INTO messages (conversation_id, uid, role, content)
                SELECT %(thread)s, %(uid)s, CASE WHEN i %% 2 = 0 THEN 'user' ELSE 'assistant' END,
                       CASE WHEN i %% %(every)s = 0 THEN 'found ' || %(term)s || ' ' || i
                            ELSE 'message about the deploy ' || i END
                FROM generate_series(1, %(rows)s) i
                """,
                {"thread": thread[0], "uid": uid, "rows": rows, "every": every, "term": TERM},
            )
        conn.execute("ANALYZE messages")
        conn.commit()
        index = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (TRGM_INDEX,)).fetchone()
        offered = conn.execute(
            "SELECT count(*) = 2 FROM pg_available_extensions "
            "WHERE name IN ('pg_trgm', 'btree_gin')"
        ).fetchone()
    assert index is not None and offered is not None
    # Where the server offers the extensions, migration 0005 built the index: the plan below
    # must use it (the embedded default always offers them).
    assert index[0] or not offered[0], "pg_trgm and btree_gin are offered but there is no index"
    return bool(index[0])


def test_the_index_search_reads_messages_once(database_url: str) -> None:
    has_index = _seed(database_url)
    statement, params = q.search_statement(HEAVY, TERM, 5)  # no window: the index step
    nodes = plan_nodes(explain(database_url, statement, params))
    scans = [n for n in nodes if n.get("Relation Name") == "messages"]
    finding = [n for n in scans if n.get("Index Name") != "pk_messages"]
    assert len(finding) == 1, [(n["Node Type"], n.get("Index Name")) for n in scans]
    by_key = [n for n in scans if n.get("Index Name") == "pk_messages"]
    assert all(n["Node Type"] == "Index Scan" for n in by_key), by_key
    if has_index:
        (scan,) = finding
        assert scan["Node Type"] == "Bitmap Heap Scan", scan["Node Type"]
        used = {n.get("Index Name") for n in plan_nodes(scan)}
        assert TRGM_INDEX in used, used
