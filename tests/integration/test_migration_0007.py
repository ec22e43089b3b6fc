"""Migration 0007 numbers the memory versions already stored: per user, in ``id`` order,
``seq`` 1, 2, … and ``cum_bytes`` the running sum of ``size`` — whatever retention already
pruned, and however the users' rows interleave. Running it twice changes nothing."""

from __future__ import annotations

import psycopg
from alembic import command

from yuxi.db.migrate import alembic_config, downgrade_sync, upgrade_sync

SIZES = {"mig_a": [30, 0, 151, 7, 2_048], "mig_b": [5, 5, 40]}


def _seed(url: str) -> None:
    """Both users' versions interleaved, then the oldest of each pruned (as retention does)."""
    with psycopg.connect(url) as conn:
        for uid in SIZES:
            conn.execute("INSERT INTO users (uid, name) VALUES (%s, %s)", (uid, uid))
        for n in range(max(len(s) for s in SIZES.values())):
            for uid, sizes in SIZES.items():
                if n < len(sizes):
                    conn.execute(
                        "INSERT INTO memory_versions (version_id, uid, actor, kind, sha256, "
                        "size, parent_sha256, content) VALUES (%s, %s, 'user', 'edit', "
                        "repeat('0', 64), %s, repeat('0', 64), '')",
                        (f"mv_{uid}_{n}", uid, sizes[n]),
                    )
        conn.execute("DELETE FROM memory_versions WHERE version_id IN ('mv_mig_a_0', 'mv_mig_b_0')")


def _numbers(url: str) -> dict[str, list[tuple[int, int, int]]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT uid, size, seq, cum_bytes FROM memory_versions ORDER BY uid, id"
        ).fetchall()
    out: dict[str, list[tuple[int, int, int]]] = {}
    for uid, size, seq, cum in rows:
        out.setdefault(uid, []).append((size, seq, cum))
    return out


def _columns(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = 'memory_versions' AND column_name IN ('seq', 'cum_bytes')"
        ).fetchall()
    return {str(name) for (name,) in rows}


def test_0007_numbers_the_stored_versions_and_runs_twice(empty_database_url: str) -> None:
    url = empty_database_url
    upgrade_sync(url, "0006")
    _seed(url)
    upgrade_sync(url)
    expected = {
        # Numbered from what is left: the rule only ever compares numbers of kept versions.
        "mig_a": [(0, 1, 0), (151, 2, 151), (7, 3, 158), (2_048, 4, 2_206)],
        "mig_b": [(5, 1, 5), (40, 2, 45)],
    }
    assert _numbers(url) == expected
    command.stamp(alembic_config(url), "0006")
    upgrade_sync(url)  # again: nothing left to number
    assert _numbers(url) == expected
    downgrade_sync(url, "0006")
    assert _columns(url) == set()
    upgrade_sync(url)
    assert _numbers(url) == expected and _columns(url) == {"seq", "cum_bytes"}
