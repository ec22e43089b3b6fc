"""Migration 0009 allows the memory version kinds ``forget`` and ``import`` and nothing else new:
before it they are refused, after it they are stored, an unknown kind is still refused, the
stored rows are untouched, and running it twice changes nothing."""

from __future__ import annotations

import psycopg
import pytest

from yuxi.db.migrate import upgrade_sync
from yuxi.vocabulary import MEMORY_VERSION_KINDS

_INSERT = (
    "INSERT INTO memory_versions (version_id, uid, actor, kind, sha256, size, parent_sha256, "
    "content, seq, cum_bytes) VALUES (%s, 'mig9', 'user', %s, repeat('0', 64), 0, "
    "repeat('0', 64), '', %s, 0)"
)


def _insert(url: str, version_id: str, kind: str, seq: int) -> None:
    with psycopg.connect(url) as conn:
        conn.execute(_INSERT, (version_id, kind, seq))


def test_0009_allows_forget_and_import_only(empty_database_url: str) -> None:
    url = empty_database_url
    upgrade_sync(url, "0008")
    with psycopg.connect(url) as conn:
        conn.execute("INSERT INTO users (uid, name) VALUES ('mig9', 'mig9')")
    _insert(url, "mv_old", "edit", 1)
    for kind in ("forget", "import"):
        with pytest.raises(psycopg.errors.CheckViolation):
            _insert(url, f"mv_before_{kind}", kind, 2)
    upgrade_sync(url)
    upgrade_sync(url)  # twice: a no-op
    _insert(url, "mv_forget", "forget", 2)
    _insert(url, "mv_import", "import", 3)
    with pytest.raises(psycopg.errors.CheckViolation):
        _insert(url, "mv_unknown", "forgot", 4)
    with psycopg.connect(url) as conn:
        kinds = [k for (k,) in conn.execute("SELECT kind FROM memory_versions ORDER BY seq")]
    assert kinds == ["edit", "forget", "import"]
    assert {"forget", "import"} <= set(MEMORY_VERSION_KINDS)
