"""A prebuilt statement sends the driver exactly what Core would, or refuses to be rendered."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from sqlalchemy import Boolean, Integer, String, bindparam, func, literal, select, text
from sqlalchemy.dialects.postgresql import psycopg

from yuxi.db.prebuilt import PrebuiltStatement

DIALECT = psycopg.dialect()  # type: ignore[no-untyped-call]


def _core_params(statement: object, params: Mapping[str, object]) -> dict[str, object]:
    """What Core's execution would hand the driver: the parameters, bind-processed."""
    compiled = statement.compile(dialect=DIALECT)  # type: ignore[attr-defined]
    processors = compiled._bind_processors
    return {
        name: processors[name](value) if name in processors and value is not None else value
        for name, value in compiled.construct_params(params).items()
    }


def test_constants_are_rendered_once_with_their_conversion() -> None:
    statement = select(
        func.hashtextextended(literal("user-memory:") + bindparam("uid", type_=String()), 0),
        literal(True),
    ).where(bindparam("n", type_=Integer()) > 0)
    prebuilt = PrebuiltStatement(statement)
    sql, constants = prebuilt.render(DIALECT)
    params = {"uid": "用户-1", "n": 3}
    assert {**constants, **params} == _core_params(statement, params)
    assert sql == str(statement.compile(dialect=DIALECT))
    assert prebuilt.render(DIALECT) is prebuilt.render(DIALECT)  # compiled once per dialect


def test_a_text_statement_with_typed_parameters_passes_them_as_they_are() -> None:
    statement = text("SELECT :a || :b AS ab, :n + 1 AS n").bindparams(
        bindparam("a", type_=String()),
        bindparam("b", type_=String()),
        bindparam("n", type_=Integer()),
    )
    _, constants = PrebuiltStatement(statement).render(DIALECT)
    params = {"a": "记", "b": None, "n": 1}
    assert constants == {}
    assert {**constants, **params} == _core_params(statement, params)


def test_a_parameter_the_dialect_would_convert_is_refused() -> None:
    statement = select(literal(1)).where(bindparam("flag", type_=Boolean()))
    with pytest.raises(TypeError, match="flag"):
        PrebuiltStatement(statement).render(DIALECT)
