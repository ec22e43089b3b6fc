"""Hot-path statements run on the psycopg connection of a unit of work's own transaction.

Why: the memory write path runs two statements per agent write (the gate, the version record).
Through SQLAlchemy's session and Core execution each costs ~0.15 ms more than the same
statement sent with psycopg (execution context, result metadata, two greenlet switches), which
was a tenth of the whole write (benchmark B1). :class:`DriverStatement` keeps what SQLAlchemy
gives the rest of the code — one transaction per unit of work, one pool, errors as
:class:`sqlalchemy.exc.DBAPIError`, a dead or interrupted connection invalidated — and skips the
rest:

* the statement is still built with SQLAlchemy (one definition, typed columns) and compiled
  once per dialect: SQL text, the values of its literal binds, its bind processors;
* it runs on the connection the session has already begun (``AsyncSession.connection()``), so
  it sees and takes part in everything else the unit of work did; commit and rollback stay the
  session's;
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
from typing import Any, cast

from psycopg import AsyncConnection as DriverConnection
from psycopg import Error as DriverError
from psycopg.rows import namedtuple_row
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

__all__ = ["DriverStatement"]


class _Compiled:
    __slots__ = ("defaults", "processors", "sql")

    def __init__(self, statement: ClauseElement, dialect: Dialect) -> None:
        compiled = cast(SQLCompiler, statement.compile(dialect=dialect))
        if compiled.positional or getattr(compiled, "escaped_bind_names", None):
            raise TypeError("DriverStatement needs named, unescaped bind parameters")
        self.sql = str(compiled)
        self.defaults: dict[str, Any] = {}
        self.processors: dict[str, Callable[[Any], Any]] = {}
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

    async def first(self, session: AsyncSession, params: Mapping[str, Any]) -> Any:
        """Run the statement with ``params``; its first row as a named tuple, or ``None``."""
        connection = await session.connection()
        compiled = self.compiled_for(connection.dialect)
        # The session has just begun (or reused) this connection, so reading its driver
        # connection does no I/O and needs no greenlet.
        sync = connection.sync_connection
        driver: DriverConnection[Any] | None = (
            None if sync is None else sync.connection.driver_connection
        )
        if sync is None or driver is None:
            raise RuntimeError("the session's connection is closed")
        values = compiled.values(params)
        events = sync.dispatch
        try:
            cursor = driver.cursor(row_factory=namedtuple_row)
            if events.before_cursor_execute:  # listeners (tests, benchmarks) see it as usual
                events.before_cursor_execute(sync, cursor, compiled.sql, values, None, False)
            await cursor.execute(compiled.sql, values)
            row = await cursor.fetchone()
            if events.after_cursor_execute:
                events.after_cursor_execute(sync, cursor, compiled.sql, values, None, False)
            return row
        except DriverError as exc:
            broken = driver.closed or driver.broken
            if broken:
                await _invalidate(connection, exc)
            raise DBAPIError.instance(
                compiled.sql,
                None,
                exc,
                DriverError,
                hide_parameters=True,
                connection_invalidated=broken,
                dialect=connection.dialect,
            ) from exc
        except BaseException as exc:
            # Cancelled (or interrupted) mid-statement: nobody knows what the server got.
            await _invalidate(connection, exc)
            raise


async def _invalidate(connection: AsyncConnection, exc: BaseException) -> None:
    # Shielded: invalidating closes the driver connection, which must finish even when the
    # task that was running the statement is being cancelled.
    await asyncio.shield(asyncio.ensure_future(connection.invalidate(exc)))
