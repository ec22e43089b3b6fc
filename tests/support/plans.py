"""Reading PostgreSQL's plan of a prebuilt statement (``EXPLAIN (FORMAT JSON)``), for tests
that pin the shape a statement must keep at scale."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import psycopg
from sqlalchemy.sql import ClauseElement

from tests.support.sql import APP_DIALECT


def explain(
    url: str, statement: ClauseElement, params: Mapping[str, Any], *, analyze: bool = False
) -> dict[str, Any]:
    """The plan of ``statement`` with ``params`` (inlined as literals: a custom plan, as the
    history tools get with ``PLAN_WITH_PARAMETERS``); with ``analyze``, as it ran."""
    sql = str(
        statement.params(**params).compile(
            dialect=APP_DIALECT, compile_kwargs={"literal_binds": True}
        )
    )
    with psycopg.connect(url) as conn:
        options = "ANALYZE, FORMAT JSON" if analyze else "FORMAT JSON"
        row = conn.execute(f"EXPLAIN ({options}) {sql.replace('%%', '%')}").fetchone()
    assert row is not None
    plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
    return dict(plan[0]["Plan"])


def plan_nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node of ``plan``, depth first."""
    out = [plan]
    for child in plan.get("Plans", []):
        out += plan_nodes(child)
    return out
