"""The history tools' statements are built once per shape (``yuxi.repositories._history_params``):
two calls with different values give the same statement object, and no value is in its SQL —
SQLAlchemy then keys its compiled-SQL cache on an object it has traversed before (building them
anew cost ~18 ms of Python per search at 10M rows, benchmark B4)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.sql import APP_DIALECT
from yuxi.repositories import _history_queries as q
from yuxi.repositories import _history_reads as reads
from yuxi.repositories._history_params import Statement

A, B = "uid-marker-a-甲", "uid-marker-b-乙"

SHAPES: dict[str, Callable[[str, int], Statement]] = {
    "search": lambda uid, n: q.search_statement(uid, f"deploy {n}", n),
    "search, windowed, own run": lambda uid, n: q.search_statement(
        uid, f"部署 {n}", n, current_run_id=f"run-{uid}", window=200 + n
    ),
    "has older": lambda uid, n: q.has_older_statement(uid, 200 + n),
    "recent count": lambda uid, n: q.recent_count_statement(uid, 200 + n, None),
    "thread": lambda uid, n: reads.thread_statement(uid, f"thread-{uid}"),
    "window latest": lambda uid, n: reads.thread_window("latest", uid, n, limit=n),
    "window before": lambda uid, n: reads.thread_window("before", uid, n, anchor_id=n, limit=n),
    "window after": lambda uid, n: reads.thread_window("after", uid, n, anchor_id=n, limit=n),
    "window anchor": lambda uid, n: reads.thread_window("anchor", uid, n, anchor_id=n),
    "tool calls": lambda uid, n: reads.tool_calls_statement(uid, n),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_one_statement_per_shape_values_bound_apart(shape: str) -> None:
    first, first_values = SHAPES[shape](A, 7)
    second, second_values = SHAPES[shape](B, 9)
    assert first is second
    assert first_values["uid"] == A and second_values["uid"] == B
    sql = str(first.compile(dialect=APP_DIALECT))
    assert A not in sql and B not in sql
    assert "%(uid)s" in sql
