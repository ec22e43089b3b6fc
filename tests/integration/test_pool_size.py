"""The application pool keeps what it opens (``yuxi.db.engine.create_engine``): at most
``pool_size`` connections, none closed because a burst is over. A pool with overflow closed a
connection each time one came back to a full pool and opened one again at the next burst — a
new backend started on both sides, and its prepared statements gone (issue 35)."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import event, text

from yuxi.db.engine import create_engine


async def test_a_burst_past_the_pool_waits_and_keeps_its_connections(database_url: str) -> None:
    engine = create_engine(database_url, pool_size=3)
    opened: list[Any] = []
    closed: list[Any] = []
    event.listen(engine.sync_engine.pool, "connect", lambda conn, record: opened.append(conn))
    event.listen(engine.sync_engine.pool, "close", lambda conn, record: closed.append(conn))
    at_once = 0
    most = 0

    async def hold() -> None:
        nonlocal at_once, most
        async with engine.connect() as connection:
            at_once += 1
            most = max(most, at_once)
            await connection.execute(text("SELECT pg_sleep(0.05)"))
            at_once -= 1

    try:
        await asyncio.gather(*(hold() for _ in range(10)))
        assert (len(opened), most) == (3, 3)  # the other seven waited for one to come back
        await asyncio.gather(*(hold() for _ in range(10)))
        assert len(opened) == 3 and not closed  # the same three, kept
    finally:
        await engine.dispose()
