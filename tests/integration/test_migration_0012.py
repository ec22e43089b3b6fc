"""Migration 0012: the stored terms are re-indexed with stemming and single Han characters,
the per-thread running totals stay exact, new messages get the new terms, running it again
changes nothing, and down and up again gives the same index."""

from __future__ import annotations

import importlib.util
from typing import Any

import psycopg
import sqlalchemy as sa
from alembic import command

from yuxi.db.engine import sqlalchemy_url
from yuxi.db.migrate import MIGRATIONS_DIR, alembic_config, downgrade_sync, upgrade_sync

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


def _migration_0012() -> Any:
    """The migration's module, loaded on its own (Alembic loads it afresh per command, so its
    batch constants can only be lowered on a copy of ours)."""
    path = next((MIGRATIONS_DIR / "versions").glob("0012_*.py"))
    spec = importlib.util.spec_from_file_location("migration_0012_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_0012_vacuums_every_few_batches_and_rewrites_every_row(database_url: str) -> None:
    """The rewrite's own rhythm at a size a test can hold: batches of one id, a plain VACUUM
    after every second batch (never after the last: the closing VACUUM (ANALYZE) follows),
    then the concurrent rebuild of the terms index; every stale row rewritten, totals exact."""
    url = database_url
    _seed(url)
    with psycopg.connect(url) as conn:
        conn.execute("UPDATE message_search SET terms = ARRAY['stale']")
        conn.commit()
        top = conn.execute("SELECT max(message_id) FROM message_search").fetchone()
    assert top is not None
    batches = int(top[0])  # ids from 1, one per batch
    migration = _migration_0012()
    migration.BATCH, migration.VACUUM_EVERY = 1, 2
    sent: list[str] = []
    engine = sa.create_engine(sqlalchemy_url(url), poolclass=sa.pool.NullPool)
    sa.event.listen(
        engine,
        "before_cursor_execute",
        lambda _c, _cur, sql, *_: sent.append(" ".join(sql.split())),
    )
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as bind:
            migration._reindex_all(bind)
    finally:
        engine.dispose()
    rhythm = [
        "U"
        if sql.startswith("UPDATE message_search")
        else "V"
        if sql == "VACUUM message_search"
        else "A"
        if sql.startswith("VACUUM (ANALYZE)")
        else "R"
        if sql.startswith("REINDEX")
        else None
        for sql in sent
    ]
    expected = "".join(
        "U" + ("V" if b % 2 == 0 and b < batches else "") for b in range(1, batches + 1)
    )
    assert "".join(r for r in rhythm if r) == expected + "AR"
    assert expected.count("V") == (batches - 1) // 2 >= 2
    indexed, totals = _state(url)
    assert [terms for _, terms in indexed] == [STEMMED, WITH_CHARACTERS] * 2
    assert totals == [("mig-0", 2, 14, 2, 14), ("mig-1", 2, 14, 2, 14)]
