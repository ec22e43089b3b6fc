"""Counting what a piece of code asks of PostgreSQL: statements, transactions and round trips.

Through public hooks only: SQLAlchemy's engine events (``before_cursor_execute``, ``begin``,
``commit``, ``rollback``) for the app's engine, and a psycopg cursor class for the LangGraph
checkpointer's own pool (psycopg's ``cursor_factory`` connection argument: every statement the
saver sends goes through a cursor the connection makes).

A count is deterministic where a timing is not: a change that adds a statement or a transaction
to a hot path fails the test that pins the count, on any machine.
"""

from __future__ import annotations

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
def counting(engine: AsyncEngine) -> Iterator[Counts]:
    """Every statement, transaction begin, commit and rollback on ``engine`` inside the block."""
    seen = Counts()
    sync = engine.sync_engine

    def on_statement(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.statements.append(_flat(statement))

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
        ("before_cursor_execute", on_statement),
        ("begin", on_begin),
        ("commit", on_commit),
        ("rollback", on_rollback),
    ]
    for name, fn in hooks:
        event.listen(sync, name, fn)
    try:
        yield seen
    finally:
        for name, fn in hooks:
            event.remove(sync, name, fn)


class CountingCursor(AsyncCursor[Any]):
    """An ``AsyncCursor`` that notes every statement it sends in :attr:`sent` (class-wide: the
    pool makes the connections, and so the cursors). ``executemany`` notes one entry per
    parameter set (each is a statement the server runs)."""

    sent: ClassVar[list[str]] = []

    async def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        CountingCursor.sent.append(_flat(str(query)))
        return await super().execute(query, params, **kwargs)

    async def executemany(self, query: Any, params_seq: Iterable[Any], **kwargs: Any) -> None:
        params = list(params_seq)
        CountingCursor.sent.extend(_flat(str(query)) for _ in params)
        await super().executemany(query, params, **kwargs)
