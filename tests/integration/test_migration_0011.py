"""Migration 0011 gives every thread in the trash the time it went there: ``deleted_at``, back-
filled from ``updated_at`` for threads deleted before it (a deletion touched ``updated_at``, and
nothing touches a deleted thread since), left empty for every other thread; from then on the
database refuses a deleted thread without it and any other thread with it. Running it twice
changes nothing; downgrading removes it."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest

from yuxi.db.migrate import downgrade_sync, upgrade_sync

_THREAD = (
    "INSERT INTO conversations (thread_id, uid, status, updated_at) VALUES (%s, 'mig11', %s, %s)"
)
T_DELETED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
T_ACTIVE = datetime(2026, 2, 3, 4, 5, 6, tzinfo=UTC)


def _rows(url: str) -> dict[str, tuple[str, datetime | None, datetime]]:
    with psycopg.connect(url) as conn:
        found = conn.execute(
            "SELECT thread_id, status, deleted_at, updated_at FROM conversations"
        ).fetchall()
    return {t: (status, deleted, updated) for t, status, deleted, updated in found}


def test_0011_back_fills_the_trash_clock_and_then_enforces_it(empty_database_url: str) -> None:
    url = empty_database_url
    upgrade_sync(url, "0010")
    with psycopg.connect(url) as conn:
        conn.execute("INSERT INTO users (uid, name) VALUES ('mig11', 'mig11')")
        conn.execute(_THREAD, ("t-deleted", "deleted", T_DELETED))
        conn.execute(_THREAD, ("t-active", "active", T_ACTIVE))
        conn.execute(_THREAD, ("t-archived", "archived", T_ACTIVE))
    upgrade_sync(url)
    first = _rows(url)
    upgrade_sync(url)  # twice: a no-op
    assert (
        _rows(url)
        == first
        == {
            "t-deleted": ("deleted", T_DELETED, T_DELETED),
            "t-active": ("active", None, T_ACTIVE),
            "t-archived": ("archived", None, T_ACTIVE),
        }
    )
    with psycopg.connect(url) as conn:
        indexes = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes")}
        assert "ix_conversations_trash" in indexes
    with psycopg.connect(url) as conn, pytest.raises(psycopg.errors.CheckViolation):
        conn.execute(_THREAD, ("t-bad-deleted", "deleted", T_ACTIVE))
    with psycopg.connect(url) as conn, pytest.raises(psycopg.errors.CheckViolation):
        conn.execute("UPDATE conversations SET deleted_at = now() WHERE thread_id = 't-active'")
    with psycopg.connect(url) as conn:  # a restore clears both together
        conn.execute(
            "UPDATE conversations SET status = 'active', deleted_at = NULL "
            "WHERE thread_id = 't-deleted'"
        )

    downgrade_sync(url, "0010")
    with psycopg.connect(url) as conn:
        columns = {
            r[0]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'conversations'"
            )
        }
    assert "deleted_at" not in columns
    upgrade_sync(url)
    assert _rows(url)["t-deleted"][1] is None  # restored before the downgrade: not in the trash
