"""The history tools' statements (``yuxi.repositories.lookback.statements``) are built once
per shape: two calls with different values give the same statement object, and no value is in
its SQL — SQLAlchemy then keys its compiled-SQL cache on an object it has traversed before (the
cost of building them anew: docs/performance.md, B4)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.sql import APP_DIALECT
from yuxi.repositories.lookback import statements
from yuxi.repositories.lookback.statements import Statement

A, B = "uid-marker-a-甲", "uid-marker-b-乙"

SHAPES: dict[str, Callable[[str, int], Statement]] = {
    "corpus": lambda uid, n: statements.corpus_statement(uid, None),
    "corpus, own run": lambda uid, n: statements.corpus_statement(uid, f"run-{uid}"),
    "rank": lambda uid, n: statements.rank_statement(
        uid,
        [f"deploy{n}", "部署"],
        phrases=[],
        limit=n,
        current_run_id=None,
        after=None,
        before=None,
        conversation_id=None,
        docs=100 + n,
        avgdl=float(n),
    ),
    "sampled rank, phrase, own run": lambda uid, n: statements.sampled_rank_statement(
        uid,
        [f"deploy{n}", "部署"],
        phrases=[([f"deploy{n}"], f"deploy{n}")],
        limit=n,
        current_run_id=f"run-{uid}",
        after=None,
        before=None,
        conversation_id=None,
        docs=3000 + n,
        avgdl=float(n),
        cap=n,
        window=200 + n,
    ),
    "sampled rank, filtered": lambda uid, n: statements.sampled_rank_statement(
        uid,
        [f"deploy{n}"],
        phrases=[],
        limit=n,
        current_run_id=None,
        after=None,
        before=None,
        conversation_id=n,
        docs=3000 + n,
        avgdl=float(n),
        cap=n,
        window=200 + n,
    ),
    "details": lambda uid, n: statements.details_statement(uid, [n, n + 1]),
    "thread filter": lambda uid, n: statements.thread_filter_statement(uid, f"thread-{uid}"),
    "thread": lambda uid, n: statements.thread_statement(uid, f"thread-{uid}"),
    "window latest": lambda uid, n: statements.thread_window("latest", uid, n, limit=n),
    "window before": lambda uid, n: statements.thread_window(
        "before", uid, n, anchor_id=n, limit=n
    ),
    "window after": lambda uid, n: statements.thread_window("after", uid, n, anchor_id=n, limit=n),
    "window anchor": lambda uid, n: statements.thread_window("anchor", uid, n, anchor_id=n),
    "tool calls": lambda uid, n: statements.tool_calls_statement(uid, n),
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
