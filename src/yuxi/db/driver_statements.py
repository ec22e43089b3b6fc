"""Hot-path statements sent with psycopg on a pooled connection, inside SQLAlchemy's pool.

Why: the memory write path runs two statements per agent write (the gate, the version record).
Through SQLAlchemy's session and Core execution each cost ~0.15 ms more than the same statement
sent with psycopg (execution context, result metadata, greenlet switches), and the session's own
begin / commit / close another ~0.3 ms (benchmark B1). :class:`DriverStatement` keeps what
SQLAlchemy gives the rest of the code — one pool, errors as :class:`sqlalchemy.exc.DBAPIError`,
a dead or interrupted connection invalidated — and skips the rest:

* the statement is still built with SQLAlchemy (one definition, typed columns) and compiled
  once per dialect: SQL text, the values of its literal binds, its bind processors;
* it runs in a session's transaction (``AsyncSession.connection()``: it sees and takes part in
  everything else the session did, which commits or rolls back), or on a bare
  ``AsyncConnection`` whose transaction is psycopg's own: begun by the first statement, ended
  by :func:`commit_driver` — or, if never committed, rolled back when the connection goes back
  to the pool (SQLAlchemy's reset on return);
* a psycopg error becomes the :class:`~sqlalchemy.exc.DBAPIError` subclass SQLAlchemy would
  have raised (``IntegrityError``, ``OperationalError``, …; parameters hidden: they can hold a
  user's memory), and a closed or broken connection is invalidated, so the pool replaces it;
* a task cancelled mid-statement (or any other ``BaseException``) invalidates the connection,
  as SQLAlchemy does: the protocol state is unknown.

SQLAlchemy's ``before_cursor_execute`` / ``after_cursor_execute`` listeners are called as
usual, with the psycopg cursor and no execution context (``None``).

What it does not do: result processing (rows are psycopg's named tuples; use it only for
columns whose Python value psycopg already gives as SQLAlchemy would — strings, numbers,
booleans, timestamps), ``expanding`` / ``literal_execute`` binds (refused when compiled), ORM
events, statement logging (``echo``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, cast

from psycopg import AsyncConnection as DriverConnection
from psycopg import AsyncCursor
from psycopg import Error as DriverError
from psycopg.pq import TransactionStatus
from psycopg.rows import RowMaker, namedtuple_row, no_result
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

__all__ = [
    "DriverStatement",
    "Executor",
    "commit_driver",
    "outside_transaction",
]


class _Compiled:
    __slots__ = ("defaults", "make_row", "processors", "sql")

    def __init__(self, statement: ClauseElement, dialect: Dialect) -> None:
        compiled = cast(SQLCompiler, statement.compile(dialect=dialect))
        if compiled.positional or getattr(compiled, "escaped_bind_names", None):
            raise TypeError("DriverStatement needs named, unescaped bind parameters")
        self.sql = str(compiled)
        self.defaults: dict[str, Any] = {}
        self.processors: dict[str, Callable[[Any], Any]] = {}
        #: The named tuple its rows become, once a result has named the columns.
        self.make_row: RowMaker[Any] | None = None
        for bind, name in compiled.bind_names.items():
            if bind.expanding or bind.literal_execute:
                raise TypeError(f"DriverStatement cannot run the expanding bind {name!r}")
            processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if bind.required:
                if processor is not None:
                    self.processors[name] = processor
            else:  # a literal: its value is part of the statement
                value = bind.effective_value
                self.defaults[name] = value if processor is None else processor(value)

    def row_factory(self, cursor: AsyncCursor[Any]) -> RowMaker[Any]:
        """psycopg's ``namedtuple_row``, asked once per statement: one statement always returns
        the same columns, and reading their names from every result cost ~20 µs a statement
        with the gate's 12 columns (B1)."""
        make = self.make_row
        if make is None:
            make = namedtuple_row(cursor)
            if make is not no_result:
                self.make_row = make
        return make

    def values(self, params: Mapping[str, Any]) -> dict[str, Any]:
        values = {**self.defaults, **params}
        for name, processor in self.processors.items():
            values[name] = processor(values[name])
        return values


class DriverStatement:
    """A prebuilt SQLAlchemy statement, run on the driver connection of a session's
    transaction (see the module docstring for what is kept and what is skipped)."""

    __slots__ = ("_compiled", "_statement")

    def __init__(self, statement: ClauseElement) -> None:
        self._statement = statement
        self._compiled: dict[str, _Compiled] = {}

    def compiled_for(self, dialect: Dialect) -> _Compiled:
        compiled = self._compiled.get(dialect.name)
        if compiled is None:
            compiled = self._compiled[dialect.name] = _Compiled(self._statement, dialect)
        return compiled

    async def first(self, executor: Executor, params: Mapping[str, Any]) -> Any:
        """Run the statement with ``params`` in ``executor``'s transaction; its first row as a
        named tuple, or ``None``."""
        connection = await executor.connection() if isinstance(executor, AsyncSession) else executor
        compiled = self.compiled_for(connection.dialect)
        values = compiled.values(params)
        sync, driver = _driver_of(connection)
        events = sync.dispatch
        # A plain try, not a context manager: this runs twice per agent memory write, and an
        # async generator per statement is measurable there (B1).
        try:
            cursor = driver.cursor(row_factory=compiled.row_factory)
            if events.before_cursor_execute:  # listeners (tests, benchmarks) see it as usual
                events.before_cursor_execute(sync, cursor, compiled.sql, values, None, False)
            await cursor.execute(compiled.sql, values)
            row = await cursor.fetchone()
            if events.after_cursor_execute:
                events.after_cursor_execute(sync, cursor, compiled.sql, values, None, False)
            return row
        except BaseException as exc:
            await _raise_translated(connection, driver, compiled.sql, exc)


#: Where a :class:`DriverStatement` runs: a session's transaction (begun on first use), or a
#: connection whose transaction is the driver's own (:func:`commit_driver`).
Executor = AsyncSession | AsyncConnection


async def commit_driver(connection: AsyncConnection) -> None:
    """Commit the transaction the driver began on ``connection`` (statements sent with
    :class:`DriverStatement` on a bare connection: SQLAlchemy never began one there). Errors
    and invalidation as for a statement."""
    _, driver = _driver_of(connection)
    try:
        await driver.commit()
    except BaseException as exc:
        await _raise_translated(connection, driver, "COMMIT", exc)


def outside_transaction(connection: AsyncConnection) -> bool:
    """The driver connection is open, healthy and in no transaction: giving it back to the pool
    sends nothing to the server (the reset's rollback has nothing to roll back)."""
    sync = connection.sync_connection
    if sync is None or sync.closed or sync.invalidated:
        return False
    driver = sync.connection.driver_connection
    return (
        driver is not None
        and not driver.closed
        and driver.info.transaction_status == TransactionStatus.IDLE
    )


def _driver_of(connection: AsyncConnection) -> tuple[Connection, DriverConnection[Any]]:
    # A started connection: reading its driver connection does no I/O and needs no greenlet.
    sync = connection.sync_connection
    driver: DriverConnection[Any] | None = (
        None if sync is None else sync.connection.driver_connection
    )
    if sync is None or driver is None:
        raise RuntimeError("the connection is closed")
    return sync, driver


async def _raise_translated(
    connection: AsyncConnection, driver: DriverConnection[Any], sql: str, exc: BaseException
) -> NoReturn:
    """Raise what ``exc`` from the driver becomes: a psycopg error as the
    :class:`~sqlalchemy.exc.DBAPIError` SQLAlchemy would raise (a closed or broken connection
    invalidated first); anything else (a cancellation: nobody knows what the server got) as
    itself, once the connection is invalidated."""
    if not isinstance(exc, DriverError):
        await _invalidate(connection, exc)
        raise exc
    broken = driver.closed or driver.broken
    if broken:
        await _invalidate(connection, exc)
    raise DBAPIError.instance(
        sql,
        None,
        exc,
        DriverError,
        hide_parameters=True,
        connection_invalidated=broken,
        dialect=connection.dialect,
    ) from exc


async def _invalidate(connection: AsyncConnection, exc: BaseException) -> None:
    # Shielded: invalidating closes the driver connection, which must finish even when the
    # task that was running the statement is being cancelled.
    await asyncio.shield(asyncio.ensure_future(connection.invalidate(exc)))
