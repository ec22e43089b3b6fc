"""Comparing a deployment with its restored copy, user by user (backup/restore tests)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from sqlalchemy import text

from yuxi.bootstrap import Container

#: Per user, every row that must come back identical (all columns, in a stable order).
USER_TABLES = {
    "users": "SELECT * FROM users WHERE uid = :uid",
    "user_config": "SELECT * FROM user_config WHERE uid = :uid ORDER BY id",
    "api_tokens": "SELECT * FROM api_tokens WHERE uid = :uid ORDER BY id",
    "memory_versions": "SELECT * FROM memory_versions WHERE uid = :uid ORDER BY seq",
    "conversations": "SELECT * FROM conversations WHERE uid = :uid ORDER BY id",
    "messages": "SELECT * FROM messages WHERE uid = :uid ORDER BY id",
    "tool_calls": (
        "SELECT t.* FROM tool_calls t JOIN messages m ON m.id = t.message_id "
        "WHERE m.uid = :uid ORDER BY t.id"
    ),
    "agent_runs": "SELECT * FROM agent_runs WHERE uid = :uid ORDER BY id",
    "checkpoints": (
        "SELECT c.* FROM checkpoints c JOIN conversations v ON v.thread_id = c.thread_id "
        "WHERE v.uid = :uid ORDER BY c.thread_id, c.checkpoint_id"
    ),
}


def tree_digest(root: Path) -> str:
    """One hash over every path, type and content under ``root`` (absent → a fixed value)."""
    digest = hashlib.sha256()
    if not root.exists():
        return "absent"
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            if "pgdata" not in path.parts:  # the embedded server's own files move by themselves
                digest.update(path.read_bytes() if path.is_file() else b"<special>")
    return digest.hexdigest()


def workspace_hashes(c: Container, uid: str) -> dict[str, str]:
    found = {}
    for entry in c.workspace(uid).list_files_sync("", recursive=True):
        if not entry.is_dir:
            data = (c.workspace(uid).directory / entry.path).read_bytes()
            found[entry.path] = hashlib.sha256(data).hexdigest()
    return found


async def user_rows(c: Container, uid: str) -> dict[str, list[dict[str, Any]]]:
    rows = {}
    async with c.session_factory() as s:
        for table, statement in USER_TABLES.items():
            result = await s.execute(text(statement), {"uid": uid})
            rows[table] = [dict(r._mapping) for r in result]
    return rows


async def compare_users(source: Container, restored: Container, uids: list[str]) -> None:
    """Every user's rows and workspace files are identical in ``restored``."""
    for uid in uids:
        assert await user_rows(restored, uid) == await user_rows(source, uid), uid
        assert workspace_hashes(restored, uid) == workspace_hashes(source, uid), uid
