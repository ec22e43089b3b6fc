"""Every statement the lookback repository runs, by name: the public door for plan tests and
benchmarks that must EXPLAIN exactly what the repository executes (never a copy of it).

Each builder returns ``(statement, values)``; the statement object is built once per shape and
holds no value (see :mod:`._params`). Running them is the repository's job, not a caller's.
"""

from yuxi.repositories.lookback._params import PLAN_WITH_PARAMETERS, Statement
from yuxi.repositories.lookback._query import (
    details_statement,
    terms_statement,
    thread_filter_statement,
)
from yuxi.repositories.lookback._reads import thread_statement, thread_window, tool_calls_statement
from yuxi.repositories.lookback._sample import sampled_rank_statement
from yuxi.repositories.lookback._search import corpus_statement, rank_statement
from yuxi.repositories.lookback._threads import threads_statement

__all__ = [
    "PLAN_WITH_PARAMETERS",
    "Statement",
    "corpus_statement",
    "details_statement",
    "rank_statement",
    "sampled_rank_statement",
    "terms_statement",
    "thread_filter_statement",
    "thread_statement",
    "thread_window",
    "threads_statement",
    "tool_calls_statement",
]
