"""The LangGraph Postgres checkpointer, on its own psycopg pool (the settings it requires:
autocommit, no prepared statements, dict rows)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from psycopg import AsyncCursor
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool


@asynccontextmanager
async def open_checkpointer(
    url: str, *, max_size: int = 8, cursor_factory: type[AsyncCursor[Any]] | None = None
) -> AsyncIterator[Any]:
    """The saver on a pool of its own. ``cursor_factory`` (psycopg's connection argument) is for
    tests that count the statements the saver sends."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    if cursor_factory is not None:
        kwargs["cursor_factory"] = cursor_factory

    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        open=False,
        kwargs=kwargs,
    )
    await pool.open(wait=True, timeout=30)
    try:
        saver = AsyncPostgresSaver(pool)
        # The saver holds one asyncio lock around every read and write, which serializes every
        # run of the process on it. The lock guards a single shared connection; on a pool each
        # call checks out a connection of its own, so runs in flight save at once.
        saver.lock = contextlib.nullcontext()  # type: ignore[assignment]
        yield saver
    finally:
        await pool.close()
