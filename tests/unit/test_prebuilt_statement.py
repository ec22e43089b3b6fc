"""A prebuilt statement sends the driver exactly what Core would, or refuses to be rendered."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from psycopg.types.json import Jsonb
from sqlalchemy import Integer, String, bindparam, func, literal, select, text
from sqlalchemy.dialects.postgresql import JSONB, psycopg

import yuxi
from yuxi.db.prebuilt import PrebuiltStatement

DIALECT = psycopg.dialect()  # type: ignore[no-untyped-call]


def test_constants_are_rendered_once_with_their_conversion() -> None:
    statement = select(
        func.hashtextextended(literal("user-memory:") + bindparam("uid", type_=String()), 0),
        literal(True),
    ).where(bindparam("n", type_=Integer()) > 0)
    prebuilt = PrebuiltStatement(statement)
    rendered = prebuilt.render(DIALECT)
    sql, constants = rendered.sql, rendered.constants
    # Strings and integers need no conversion; psycopg adapts a bool itself. What Core hands
    # the driver for the same statement is compared on a real server in
    # tests/integration/test_prebuilt_params.py.
    assert constants == {
        "param_1": "user-memory:",
        "hashtextextended_2": 0,
        "param_2": True,
        "param_3": 0,
    }
    assert sql == str(statement.compile(dialect=DIALECT))
    assert prebuilt.render(DIALECT) is prebuilt.render(DIALECT)  # compiled once per dialect


def test_a_text_statement_with_typed_parameters_passes_them_as_they_are() -> None:
    statement = text("SELECT :a || :b AS ab, :n + 1 AS n").bindparams(
        bindparam("a", type_=String()),
        bindparam("b", type_=String()),
        bindparam("n", type_=Integer()),
    )
    rendered = PrebuiltStatement(statement).render(DIALECT)
    assert rendered.constants == {} and rendered.processors == {}
    assert rendered.parameters({"a": "x", "b": "y", "n": 1}) == {"a": "x", "b": "y", "n": 1}


def test_a_parameter_the_dialect_converts_goes_through_its_processor() -> None:
    """A caller's JSON document is wrapped as Core would (psycopg's ``Jsonb``), per call; a
    ``NULL`` constant of the statement is a constant, not a parameter the caller must pass."""
    statement = select(
        bindparam("doc", type_=JSONB()).label("doc"), literal(None, JSONB()).label("none")
    )
    rendered = PrebuiltStatement(statement).render(DIALECT)
    assert set(rendered.processors) == {"doc"}
    sent = rendered.parameters({"doc": {"k": "记忆"}})
    assert isinstance(sent["doc"], Jsonb) and sent["doc"].obj == {"k": "记忆"}
    assert set(sent) == {"doc", *rendered.constants}


def test_an_in_list_is_refused() -> None:
    """Core renders an expanding ``IN`` per call: it has no SQL string to prebuild."""
    statement = select(literal(1)).where(literal(1).in_([1, 2]))
    with pytest.raises(TypeError, match="IN list"):
        PrebuiltStatement(statement).render(DIALECT)


#: SQLAlchemy's documented public names that start with an underscore (to keep clear of
#: column names): ``Row._mapping``, ``Row._asdict``, ``Row._fields``.
PUBLIC_UNDERSCORED = {"_mapping", "_asdict", "_fields", "_t", "_tuple"}


def _private_uses(path: Path) -> list[str]:
    """``x._name`` on anything but ``self``/``cls``/``super()``'s own class, and ``_name=``
    keyword arguments: reaching into a library's private API."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            if node.attr.startswith("__") or node.attr in PUBLIC_UNDERSCORED:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            found.append(f"{path.name}:{node.lineno} .{node.attr}")
        if isinstance(node, ast.keyword) and (node.arg or "").startswith("_"):
            found.append(f"{path.name}:{node.lineno} {node.arg}=")
    return found


def test_the_sql_hot_path_uses_no_private_sqlalchemy_api() -> None:
    """Issue 35: the statements of the hot path (prebuilt, the engine, the unit of work, every
    repository) reach SQLAlchemy and psycopg through their public API only, so an upgrade
    cannot silently change what they send."""
    src = Path(yuxi.__file__).parent
    files = [
        src / "db" / "prebuilt.py",
        src / "db" / "engine.py",
        src / "services" / "unit_of_work.py",
        *sorted((src / "repositories").rglob("*.py")),
    ]
    assert [use for path in files for use in _private_uses(path)] == []
