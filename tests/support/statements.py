"""Counting what a piece of code asks of PostgreSQL: statements, transactions and round trips.

Through public hooks only. Statements are seen where every one of them passes, a psycopg cursor
(a connection's ``cursor_factory``): for the app's engine, SQLAlchemy's own statements and the
prebuilt ones it sends on the session's connection directly (:mod:`yuxi.db.prebuilt`) alike —
set on each connection the pool hands out inside the block (its ``checkout`` event); for the
LangGraph checkpointer's pool, through its ``cursor_factory`` connection argument. Transactions
are SQLAlchemy's engine events (``begin``, ``commit``, ``rollback``).

Thread hops (:func:`thread_hops`) are counted where they all pass, the event loop's
``run_in_executor``.

A count is deterministic where a timing is not: a change that adds a statement or a transaction
to a hot path fails the test that pins the count, on any machine.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from psycopg import AsyncCursor
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine


@dataclass
class Counts:
    """What one block sent on the app's engine."""

    statements: list[str] = field(default_factory=list)
    begins: int = 0
    commits: int = 0
    rollbacks: int = 0

    @property
    def round_trips(self) -> int:
        """Statements plus psycopg's own ``BEGIN`` (a round trip before a transaction's first
        statement) plus each ``COMMIT`` / ``ROLLBACK``."""
        return len(self.statements) + self.begins + self.commits + self.rollbacks

    def matching(self, *fragments: str) -> list[str]:
        return [s for s in self.statements if any(f in s for f in fragments)]


def _flat(sql: str) -> str:
    return " ".join(sql.split())


@contextmanager
def sent_statements(
    engine: AsyncEngine, note: Callable[[str], None] | None = None
) -> Iterator[list[tuple[str, Any]]]:
    """Every statement (whitespace folded) and its parameters, as the driver got them, that a
    connection of ``engine`` checked out inside the block sends through a cursor; each
    statement is also passed to ``note`` as it is sent."""
    sent: list[tuple[str, Any]] = []

    def noted(sql: str, params: Any) -> None:
        sent.append((sql, params))
        if note is not None:
            note(sql)

    class Observed(CountingCursor):
        def _note(self, sql: str, params: Any) -> None:
            noted(sql, params)

    patched: list[tuple[Any, Any]] = []

    def on_checkout(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        driver = dbapi_connection.driver_connection
        patched.append((driver, driver.cursor_factory))
        driver.cursor_factory = Observed

    pool = engine.sync_engine.pool
    event.listen(pool, "checkout", on_checkout)
    try:
        yield sent
    finally:
        event.remove(pool, "checkout", on_checkout)
        for driver, factory in reversed(patched):
            driver.cursor_factory = factory


@contextmanager
def counting(engine: AsyncEngine) -> Iterator[Counts]:
    """Every statement, transaction begin, commit and rollback on ``engine`` inside the block."""
    seen = Counts()
    sync = engine.sync_engine

    # A connection in autocommit (``UnitOfWorkFactory.one_statement``) sends no BEGIN, COMMIT or
    # ROLLBACK: SQLAlchemy's transaction on it is its own bookkeeping, not a round trip.
    def sent(conn: Any) -> bool:
        return bool(conn.get_execution_options().get("isolation_level") != "AUTOCOMMIT")

    def on_begin(conn: Any) -> None:
        seen.begins += sent(conn)

    def on_commit(conn: Any) -> None:
        seen.commits += sent(conn)

    def on_rollback(conn: Any) -> None:
        seen.rollbacks += sent(conn)

    hooks: list[tuple[str, Callable[..., None]]] = [
        ("begin", on_begin),
        ("commit", on_commit),
        ("rollback", on_rollback),
    ]
    for name, fn in hooks:
        event.listen(sync, name, fn)
    try:
        with sent_statements(engine, seen.statements.append):
            yield seen
    finally:
        for name, fn in hooks:
            event.remove(sync, name, fn)


class CountingCursor(AsyncCursor[Any]):
    """An ``AsyncCursor`` that notes every statement it sends in :attr:`sent` (class-wide: the
    pool makes the connections, and so the cursors). ``executemany`` notes one entry per
    parameter set (each is a statement the server runs). A subclass notes elsewhere by
    overriding :meth:`_note`."""

    sent: ClassVar[list[str]] = []

    def _note(self, sql: str, params: Any) -> None:
        CountingCursor.sent.append(sql)

    async def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        self._note(_flat(str(query)), params)
        return await super().execute(query, params, **kwargs)

    async def executemany(self, query: Any, params_seq: Iterable[Any], **kwargs: Any) -> None:
        params = list(params_seq)
        for p in params:
            self._note(_flat(str(query)), p)
        await super().executemany(query, params, **kwargs)


@contextmanager
def thread_hops() -> Iterator[list[str]]:
    """The name of every callable handed to the running event loop's thread pool inside the
    block (``loop.run_in_executor``, which ``asyncio.to_thread`` uses too), in order. Each is a
    hop: a worker thread woken, the GIL handed over and back, the loop woken again."""
    loop = asyncio.get_running_loop()
    hops: list[str] = []
    original = loop.run_in_executor

    def noted(executor: Any, func: Callable[..., Any], *args: Any) -> Any:
        hops.append(_callable_name(func))
        return original(executor, func, *args)

    loop.run_in_executor = noted  # type: ignore[method-assign,assignment]
    try:
        yield hops
    finally:
        del loop.run_in_executor  # the instance's own attribute: the class's method again


def _callable_name(func: Any) -> str:
    # ``asyncio.to_thread`` hands over functools.partial(context.run, func, ...): name ``func``.
    while isinstance(func, functools.partial):
        inner = func.args[0] if func.func.__name__ == "run" and func.args else func.func
        func = inner
    return str(getattr(func, "__qualname__", type(func).__name__))
