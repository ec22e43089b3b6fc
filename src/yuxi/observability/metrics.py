"""Every metric Yuxi exports, in the Prometheus text format (``prometheus_client``).

Nothing is registered at import time: :class:`Metrics` builds its metrics on a
:class:`~prometheus_client.CollectorRegistry` of its own, and the composition root builds one per
container and hands it to the services, the runtime and the API. Tests get a fresh one each, so
no two containers in one process share (or fight over) a global registry.

Two kinds of number, on purpose:

* ``yuxi_runs{status}`` and ``yuxi_database_up`` are read from PostgreSQL at scrape time
  (:func:`exposition`), so every API process reports the same cluster-wide truth whatever
  process executed the runs;
* the histograms, counters and gauges below are *per process*: they count what this process
  did (the runs its own workers executed, the streams it serves). Prometheus sums them over the
  processes it scrapes.

Label values are closed sets only — run statuses from :mod:`yuxi.vocabulary`, error codes from
:mod:`yuxi.errors`, tool names fixed in code — never a user id, a thread id, a path or any text.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from typing import TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from yuxi.errors import YuxiError
from yuxi.vocabulary import LEASE_EXPIRED, PARENT_RUN_ENDED, RUN_STATUSES

__all__ = [
    "CONTENT_TYPE",
    "HISTORY_TOOLS",
    "MEMORY_WRITE_STATUSES",
    "Metrics",
    "exposition",
    "track_open",
]

#: The classic text format (0.0.4): every Prometheus version reads it.
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
#: The ``tool`` label of ``yuxi_history_tool_seconds``.
HISTORY_TOOLS = ("search_thread_messages", "read_thread_messages", "list_threads")
#: A ``remember_memory`` that returned a result (a refusal is counted by its error code).
MEMORY_WRITE_STATUSES = ("updated", "unchanged")
_RECONCILE_CODES = (LEASE_EXPIRED, PARENT_RUN_ENDED)

_RUN_BUCKETS = (0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1800)
_FIRST_TOKEN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60)
_LOCK_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15)
_HISTORY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

T = TypeVar("T")


@functools.cache
def _error_codes() -> frozenset[str]:
    """Every ``code`` of the Yuxi exception tree (one definition: :mod:`yuxi.errors`)."""
    codes: set[str] = set()
    pending: list[type[YuxiError]] = [YuxiError]
    while pending:
        cls = pending.pop()
        codes.add(cls.code)
        pending.extend(cls.__subclasses__())
    return frozenset(codes)


def _closed(value: str, allowed: Iterable[str], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"{what} {value!r} is not a known label value")
    return value


class Metrics:
    """The per-process metrics, on their own registry (``registry``)."""

    def __init__(self, *, process: bool = False) -> None:
        """``process``: also export ``process_*`` (CPU, memory, open files) of this process."""
        self.registry = CollectorRegistry()
        r = self.registry
        if process:
            ProcessCollector(registry=r)
        self.run_duration = Histogram(
            "yuxi_run_duration_seconds",
            "Wall time of the runs this process executed, by the status they ended with "
            "(cancelled: stopped by a cancel request, the run timeout or a lost heartbeat).",
            ["status"],
            buckets=_RUN_BUCKETS,
            registry=r,
        )
        self.time_to_first_token = Histogram(
            "yuxi_run_time_to_first_token_seconds",
            "From a run's start in this process to its first streamed token.",
            buckets=_FIRST_TOKEN_BUCKETS,
            registry=r,
        )
        self.memory_writes = Counter(
            "yuxi_memory_writes",
            "remember_memory calls by result: updated, unchanged, or the refusal's error code.",
            ["result"],
            registry=r,
        )
        self.memory_lock_wait = Histogram(
            "yuxi_memory_lock_wait_seconds",
            "Time a remember_memory waited for its locks (advisory lock, run row, workspace "
            "lock) and the current file.",
            buckets=_LOCK_BUCKETS,
            registry=r,
        )
        self.lease_reconciles = Counter(
            "yuxi_lease_reconciles",
            "Runs failed by this process's reconciliation, by the code they got.",
            ["code"],
            registry=r,
        )
        self.history_tool = Histogram(
            "yuxi_history_tool_seconds",
            "Latency of the history lookback tools, by tool.",
            ["tool"],
            buckets=_HISTORY_BUCKETS,
            registry=r,
        )
        self.sse_streams_open = Gauge(
            "yuxi_sse_streams_open", "Run event streams this process is serving.", registry=r
        )
        # Known series start at zero, so a rate() has a baseline from the first scrape on.
        for status in RUN_STATUSES:
            self.run_duration.labels(status=status)
        # Each series resolved once, not per call: remember_memory counts every call it answers.
        self._memory_write_counts = {
            result: self.memory_writes.labels(result=result) for result in MEMORY_WRITE_STATUSES
        }
        for code in _RECONCILE_CODES:
            self.lease_reconciles.labels(code=code)
        for tool in HISTORY_TOOLS:
            self.history_tool.labels(tool=tool)

    def run_finished(self, status: str, seconds: float) -> None:
        self.run_duration.labels(status=_closed(status, RUN_STATUSES, "run status")).observe(
            seconds
        )

    def memory_write(self, result: str) -> None:
        """``result``: a write status, or a refusal's error code (an unknown code counts as
        the generic ``error``, so a label can never carry anything else)."""
        counter = self._memory_write_counts.get(result)
        if counter is None:  # an error code's first count, or a text that is no code at all
            key = result if result in _error_codes() else YuxiError.code
            counter = self._memory_write_counts.setdefault(
                key, self.memory_writes.labels(result=key)
            )
        counter.inc()

    def reconciled(self, code: str) -> None:
        self.lease_reconciles.labels(code=_closed(code, _RECONCILE_CODES, "reconcile code")).inc()

    def history_call(self, tool: str, seconds: float) -> None:
        self.history_tool.labels(tool=_closed(tool, HISTORY_TOOLS, "history tool")).observe(seconds)


class _Scrape:
    """One scrape: the process's registry plus the numbers read from the database just now."""

    def __init__(self, metrics: Metrics, run_counts: Mapping[str, int] | None) -> None:
        self._metrics = metrics
        self._run_counts = run_counts

    def collect(self) -> Iterable[Metric]:
        yield from self._metrics.registry.collect()
        up = GaugeMetricFamily(
            "yuxi_database_up", "1 when the database answered this scrape's run count."
        )
        up.add_metric([], 0 if self._run_counts is None else 1)
        yield up
        if self._run_counts is None:
            return
        runs = GaugeMetricFamily(
            "yuxi_runs",
            "Runs in the database by status (cluster-wide, counted at scrape time).",
            labels=["status"],
        )
        for status in RUN_STATUSES:
            runs.add_metric([status], self._run_counts.get(status, 0))
        yield runs


def exposition(metrics: Metrics, run_counts: Mapping[str, int] | None) -> bytes:
    """The text exposition of ``metrics`` and the database's run counts (``None``: the
    database did not answer; ``yuxi_database_up`` is then 0 and ``yuxi_runs`` is left out)."""
    return generate_latest(_Scrape(metrics, run_counts))


async def track_open(gauge: Gauge, source: AsyncIterator[T]) -> AsyncGenerator[T, None]:
    """``source``'s items, with ``gauge`` one higher while it is being iterated: from the first
    item asked for until it ends, fails, or is closed or cancelled (a client that went away).
    Closing this closes ``source`` too (when it can be closed)."""
    gauge.inc()
    try:
        async for item in source:
            yield item
    finally:
        gauge.dec()
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()
