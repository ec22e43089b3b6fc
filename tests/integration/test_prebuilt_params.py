"""A prebuilt statement hands the driver exactly what Core's execution of the same statement
does (read through ``before_cursor_execute``), on a real server, and gets the same row."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, String, bindparam, event, func, literal, select
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from yuxi.db.prebuilt import PrebuiltStatement


def _plain(params: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    # Each value's type and value; psycopg's Jsonb wrapper has no equality of its own, so what
    # it wraps is compared (its type still is).
    return {k: (type(v).__name__, getattr(v, "obj", v)) for k, v in params.items()}


async def test_the_driver_gets_what_core_would_send(engine: AsyncEngine) -> None:
    statement = select(
        func.hashtextextended(literal("user-memory:") + bindparam("uid", type_=String()), 0).label(
            "h"
        ),
        literal(True).label("flag"),
        literal({"k": "记忆", "n": 1}, JSONB).label("doc"),
        (bindparam("n", type_=Integer()) + 1).label("n1"),
        bindparam("given", type_=JSONB()).label("given"),
    )
    # A caller's JSON document goes through its type's processor, as in Core.
    params = {"uid": "用户-qzx", "n": 41, "given": {"记": [1, None]}}
    sent: list[dict[str, Any]] = []

    def on_statement(conn: Any, cursor: Any, sql: str, parameters: Any, *rest: Any) -> None:
        sent.append(dict(parameters))

    event.listen(engine.sync_engine, "before_cursor_execute", on_statement)
    try:
        async with AsyncSession(engine) as session:
            core = (await session.execute(statement, params)).one()
            prebuilt = await PrebuiltStatement(statement).one(session, params)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", on_statement)
    assert len(sent) == 2
    assert _plain(sent[1]) == _plain(sent[0])
    assert tuple(prebuilt) == tuple(core)
    assert prebuilt.doc == {"k": "记忆", "n": 1} and prebuilt.n1 == 42 and prebuilt.flag is True
    assert prebuilt.given == {"记": [1, None]}
