"""Polling until a condition holds, for tests that watch other processes or tasks."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import psycopg


async def until(
    what: str,
    check: Callable[[], object | Awaitable[object]],
    *,
    within: float = 60.0,
    poll: float = 0.05,
) -> None:
    """Call ``check`` (plain or async) every ``poll`` seconds until it is true; fail the test
    naming ``what`` after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(poll)


async def until_waiting_on_a_lock(database_url: str, *, within: float = 30.0) -> None:
    """Until a session of this database waits for a heavyweight lock (an advisory lock, a row
    lock): proof that a writer is really blocked, not just slow to start."""
    import psycopg

    async def waiting() -> bool:
        async with await psycopg.AsyncConnection.connect(database_url) as conn:
            cur = await conn.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            row = await cur.fetchone()
        return bool(row and row[0])

    await until("a session waiting on a lock", waiting, within=within)


async def until_backend_gone(watcher: psycopg.Connection[Any], pid: int, what: str) -> None:
    """Until the server's backend ``pid`` has gone from ``pg_stat_activity``, as ``watcher`` (an
    autocommit connection of the test's own) sees it: proof that an interrupted statement's
    connection was dropped, not given back to the pool."""

    def gone() -> bool:
        row = watcher.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)
        ).fetchone()
        return row is not None and row[0] == 0

    await until(what, gone, within=10, poll=0.01)
