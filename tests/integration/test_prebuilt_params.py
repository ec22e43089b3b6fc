"""A prebuilt statement hands the driver exactly what Core's execution of the same statement
does (read at the driver's cursor, where both pass), on a real server, and gets the same row."""

from __future__ import annotations

from typing import Any, cast

import psycopg
import pytest
from sqlalchemy import Integer, String, Table, bindparam, func, literal, select
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.exc import DBAPIError, MultipleResultsFound, NoResultFound, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine

from tests.support.statements import sent_statements
from yuxi.db.models import AgentRun
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
    with sent_statements(engine) as sent:
        async with AsyncSession(engine) as session:
            core = (await session.execute(statement, params)).one()
            prebuilt = await PrebuiltStatement(statement).one(session, params)
    assert len(sent) == 2
    assert sent[1][0] == sent[0][0]
    assert _plain(sent[1][1]) == _plain(sent[0][1])
    assert tuple(prebuilt) == tuple(core)
    assert prebuilt.doc == {"k": "记忆", "n": 1} and prebuilt.n1 == 42 and prebuilt.flag is True
    assert prebuilt.given == {"记": [1, None]}


def test_what_core_computes_per_execution_is_refused_when_rendered() -> None:
    """A Python-side column default (Core computes it per execution, which a prebuilt statement
    skips: it would be sent as NULL) and an expanding IN list are refused when the statement is
    rendered, not sent wrong."""
    dialect = create_async_engine("postgresql+psycopg://").dialect  # never connects
    runs = cast(Table, AgentRun.__table__)
    with_default = insert(runs).from_select(["id"], select(bindparam("id", type_=String)))
    with pytest.raises(TypeError, match="Python-side column defaults"):
        PrebuiltStatement(with_default).render(dialect)
    listed = select(literal(1)).where(bindparam("x", type_=String).in_(["a", "b"]))
    with pytest.raises(TypeError, match="expanding IN list"):
        PrebuiltStatement(listed).render(dialect)
    # without the defaults (the server's own apply) it renders
    plain = insert(runs).from_select(
        ["id"], select(bindparam("id", type_=String)), include_defaults=False
    )
    assert PrebuiltStatement(plain).render(dialect).sql.startswith("INSERT INTO agent_runs (id)")


# -- what goes wrong, as SQLAlchemy would have it -------------------------------------------------

_PID = PrebuiltStatement(select(func.pg_backend_pid().label("pid")))
_ROWS = PrebuiltStatement(
    select(func.generate_series(1, bindparam("n", type_=Integer())).label("i"))
)


async def test_one_row_or_sqlalchemys_error(engine: AsyncEngine) -> None:
    async with AsyncSession(engine) as session:
        assert (await _ROWS.one(session, {"n": 1})).i == 1
        with pytest.raises(NoResultFound):
            await _ROWS.one(session, {"n": 0})
        with pytest.raises(MultipleResultsFound):
            await _ROWS.one(session, {"n": 2})
        assert await _ROWS.first(session, {"n": 0}) is None
        assert [r.i for r in await _ROWS.all(session, {"n": 3})] == [1, 2, 3]


async def test_a_driver_error_is_sqlalchemys_with_its_parameters_hidden(
    engine: AsyncEngine,
) -> None:
    secret = "qzx-secret-记忆"
    clash = PrebuiltStatement(
        select(
            (bindparam("a", type_=Integer()) / bindparam("zero", type_=Integer())).label("q"),
            bindparam("s", type_=String()).label("s"),
        )
    )
    async with AsyncSession(engine) as session:
        with pytest.raises(DBAPIError) as raised:
            await clash.first(session, {"a": 1, "zero": 0, "s": secret})
    assert isinstance(raised.value.orig, psycopg.errors.DivisionByZero)
    assert not raised.value.connection_invalidated
    assert secret not in str(raised.value) and secret not in repr(raised.value)


async def test_a_lost_connection_is_invalidated_and_never_handed_out_again(
    engine: AsyncEngine, database_url: str
) -> None:
    async with AsyncSession(engine) as session:
        pid = (await _PID.one(session, {})).pid
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
        with pytest.raises(OperationalError) as raised:
            await _PID.one(session, {})
        assert raised.value.connection_invalidated
    async with AsyncSession(engine) as session:
        assert (await _PID.one(session, {})).pid != pid
