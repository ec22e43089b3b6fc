"""The ranked history search reads only what it must at scale (design.md §6.2): the caller's
holders of a term through ``GIN (uid, terms)`` of ``message_search`` where the server has
btree_gin, the newest messages by a walk of ``(uid, created_at DESC)`` that stops, and
``messages`` itself never for finding — only by primary key for the few rows a phrase or the
result needs."""

from __future__ import annotations

from typing import Any

import psycopg

from tests.support.plans import explain, plan_nodes
from yuxi.repositories.lookback import statements

HEAVY = "plan_search_heavy"
TERM = "zebra4711"
TERM_INDEX = "ix_message_search_uid_terms"
WALK_INDEX = "ix_message_search_uid_created_at"


def _seed(url: str) -> bool:
    """One user with 20,000 messages (3 with the term), 20 others with 2,000 each (1 % with
    the term); returns whether the index has the uid column (btree_gin)."""
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
        conn.execute("ANALYZE message_search")
        conn.execute("ANALYZE conversations")
        conn.commit()
        row = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s", (TERM_INDEX,)
        ).fetchone()
    assert row is not None, "migration 0008 always builds the term index"
    return "uid" in str(row[0])


def _shape(nodes: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(n["Node Type"], n.get("Relation Name", ""), n.get("Index Name", "")) for n in nodes]


def _scans(url: str, statement: Any, params: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        n
        for n in plan_nodes(explain(url, statement, params))
        if n.get("Relation Name") in {"message_search", "messages"}
    ]


def test_ranking_finds_holders_through_the_term_index(database_url: str) -> None:
    per_user = _seed(database_url)
    statement, params = statements.rank_statement(
        HEAVY,
        [TERM, "found"],
        phrases=[],
        limit=5,
        current_run_id=None,
        after=None,
        before=None,
        conversation_id=None,
        docs=20_000,
        avgdl=6.0,
    )
    scans = _scans(database_url, statement, params)
    assert all(n["Node Type"] != "Seq Scan" for n in scans), _shape(scans)
    finding = [n for n in scans if n["Node Type"] == "Bitmap Heap Scan"]
    assert finding, [n["Node Type"] for n in scans]
    used = {i.get("Index Name") for n in finding for i in plan_nodes(n)}
    assert TERM_INDEX in used, used
    assert not [n for n in scans if n.get("Relation Name") == "messages"], "no phrase: no read"
    del per_user


def test_the_window_walks_the_newest_and_stops_and_a_common_term_is_never_probed(
    database_url: str,
) -> None:
    _seed(database_url)
    statement, params = statements.sampled_rank_statement(
        HEAVY,
        ["deploy", TERM],
        phrases=[],
        limit=5,
        current_run_id="no-such-run",
        after=None,
        before=None,
        conversation_id=None,
        docs=20_000,
        avgdl=6.0,
        cap=1_500,
        window=500,
    )
    nodes = plan_nodes(explain(database_url, statement, params, analyze=True))
    scans = [n for n in nodes if n.get("Relation Name") in {"message_search", "messages"}]
    assert all(n["Node Type"] != "Seq Scan" for n in scans), _shape(scans)
    walks = [n for n in scans if n.get("Index Name") == WALK_INDEX]
    assert walks and all(n["Node Type"] == "Index Scan" for n in walks), _shape(scans)
    # One walk (no filters: the sample is the window), and it stops at the window.
    assert len(walks) == 1 and walks[0]["Actual Rows"] <= 500, walks
    # "deploy" is in every sampled row: common, so its holders (all 20,000) are never read;
    # the rare term's are, through the term index, once.
    probes = [n for n in nodes if n.get("Index Name") == TERM_INDEX]
    assert probes and all(n["Actual Loops"] == 1 for n in probes), [
        (n["Node Type"], n.get("Actual Loops"), n.get("Actual Rows")) for n in probes
    ]
    assert sum(n["Actual Rows"] * n["Actual Loops"] for n in scans) < 2_000, _shape(scans)
