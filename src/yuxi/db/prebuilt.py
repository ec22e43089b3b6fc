"""A Core statement on a hot path, rendered once and run on the driver's own connection.

The statements a run's record, its claim, its event stream and a memory write make are each run
many times per run. :class:`PrebuiltStatement` runs such a statement in the unit of work's
session — its connection, its transaction — without the per-call work a Core statement costs:

* it is compiled once per dialect (the SQL string and the values of its constant bind
  parameters), not looked up in the compiled cache by a cache key computed on every call. The
  caller's parameters that the dialect converts (a JSON document: psycopg's ``Jsonb`` wrapper)
  go through the type's own bind processor, found once when rendered;
* it is sent on the session's psycopg connection directly, with a psycopg cursor: no greenlet,
  no execution context, no result object. SQLAlchemy still owns the connection and the
  transaction: the session checks the connection out of its pool, begins, commits or rolls
  back, and returns it; the statement only rides on it.

What SQLAlchemy would do around a statement, this does the same way (:func:`_sent`):

* a driver error is raised as SQLAlchemy's own exception for it (``DBAPIError.instance``: an
  ``IntegrityError``, an ``OperationalError`` …, the driver's error as ``.orig``), with the
  parameters hidden as the engine hides them (they can hold memory text);
* an error that means the connection is gone invalidates it (closed or broken: the dialect's
  own test), as does an interruption mid-statement (a cancelled task: psycopg cancels the
  statement on the server first): the pool never hands that connection out again.

Each cursor is the connection's ``cursor_factory``'s, so whatever observes a connection's
cursors (a test counting statements) sees these statements as it sees SQLAlchemy's.

Rows come back as named tuples: by position, by the names the statement gives its columns, and
as psycopg returns them (a type whose result SQLAlchemy would convert cannot be read this way:
only columns psycopg returns as Python values already — text, numbers, timestamps, JSON —
belong in such a statement's result).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

import psycopg
from psycopg.rows import namedtuple_row
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError, MultipleResultsFound, NoResultFound
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.sql import Executable

__all__ = ["PrebuiltStatement"]


Processors = dict[str, Callable[[Any], Any]]
#: A row of a prebuilt statement: a named tuple of its columns.
Record = Any

#: Where a session keeps the connection its prebuilt statements ride on (``Session.info``).
_RIDE = "yuxi.prebuilt.connection"


class Rendered:
    """A statement as the driver gets it: the SQL string, the values of its own constants, and
    the bind processor of each caller's parameter the dialect converts."""

    __slots__ = ("constants", "processors", "sql")

    def __init__(self, sql: str, constants: dict[str, Any], processors: Processors) -> None:
        self.sql = sql
        self.constants = constants
        self.processors = processors

    def parameters(self, params: dict[str, Any]) -> dict[str, Any]:
        """The constants and the caller's ``params``, each converted as Core would."""
        values = {**self.constants, **params}
        for name, process in self.processors.items():
            values[name] = process(values[name])
        return values


def _render(statement: Executable, dialect: Dialect) -> Rendered:
    """Compile ``statement`` once, through SQLAlchemy's public compiler API: the SQL string,
    its constants (``Compiled.params``) each converted by its type's bind processor
    (``TypeEngine.dialect_impl(dialect).bind_processor(dialect)``), found by its compiled name
    in ``SQLCompiler.binds``, and the processors of the caller's parameters (the binds that
    ``BindParameter.required`` a value)."""
    compiled = statement.compile(dialect=dialect)  # type: ignore[attr-defined]
    if compiled.positional:
        raise TypeError("a prebuilt statement needs a named paramstyle")
    if compiled.insert_prefetch or compiled.update_prefetch:
        # Python-side column defaults: Core computes them per execution, which is skipped here
        # (they would be sent as NULL).
        raise TypeError("a statement with Python-side column defaults cannot be prebuilt")
    constants: dict[str, Any] = {}
    processors: Processors = {}
    for name, value in compiled.params.items():
        bind = compiled.binds.get(name)
        if bind is None:  # a name the compiler escaped: not found as the SQL spells it
            raise TypeError(f"parameter {name!r} cannot be prebuilt")
        if bind.expanding:  # an IN list: Core renders it per call
            raise TypeError(f"parameter {name!r} is an expanding IN list")
        process = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if bind.required:
            # A caller's parameter: converted per call when its type needs it.
            if process is not None:
                processors[name] = process
            continue
        # A constant of the statement: converted here, once.
        constants[name] = value if process is None else process(value)
    return Rendered(compiled.string, constants, processors)


class PrebuiltStatement:
    """``statement`` as the driver's SQL string; :meth:`first`, :meth:`one`, :meth:`all` and
    :meth:`execute` run it."""

    def __init__(self, statement: Executable) -> None:
        self.statement = statement
        self._rendered: WeakKeyDictionary[Dialect, Rendered] = WeakKeyDictionary()

    def render(self, dialect: Dialect) -> Rendered:
        """The statement for ``dialect``: its SQL string, the values of its own constants
        (anonymous bind parameters such as a ``literal``) and the processors of the caller's
        parameters. Compiled on first use per dialect."""
        rendered = self._rendered.get(dialect)
        if rendered is None:
            rendered = self._rendered[dialect] = _render(self.statement, dialect)
        return rendered

    async def _cursor(
        self, session: AsyncSession, params: dict[str, Any]
    ) -> psycopg.AsyncCursor[Record]:
        """The statement sent on the session's connection; its cursor, results pending."""
        connection, driver = await _ride(session)
        rendered = self.render(connection.dialect)
        values = rendered.parameters(params)
        cursor = driver.cursor(row_factory=namedtuple_row)
        try:
            await _sent(connection, cursor, rendered.sql, values)
        except BaseException:
            await cursor.close()  # the caller never gets it to close
            raise
        return cursor

    async def first(self, session: AsyncSession, params: dict[str, Any]) -> Record | None:
        """The first row the statement returns, if any."""
        async with await self._cursor(session, params) as cursor:
            return await cursor.fetchone()

    async def one(self, session: AsyncSession, params: dict[str, Any]) -> Record:
        """The one row the statement returns (none: ``NoResultFound``; more:
        ``MultipleResultsFound``, as SQLAlchemy's ``Result.one``)."""
        async with await self._cursor(session, params) as cursor:
            rows = await cursor.fetchmany(2)
        if not rows:
            raise NoResultFound("No row was found when one was required")
        if len(rows) > 1:
            raise MultipleResultsFound("Multiple rows were found when exactly one was required")
        return rows[0]

    async def all(self, session: AsyncSession, params: dict[str, Any]) -> list[Record]:
        """Every row the statement returns."""
        async with await self._cursor(session, params) as cursor:
            return await cursor.fetchall()

    async def execute(self, session: AsyncSession, params: dict[str, Any]) -> int:
        """Run a statement that returns no rows; the number of rows it changed."""
        async with await self._cursor(session, params) as cursor:
            return int(cursor.rowcount)


async def _ride(session: AsyncSession) -> tuple[AsyncConnection, psycopg.AsyncConnection[Any]]:
    """The session's connection (begun, as any statement of the session would begin it) and
    the psycopg connection under it. Looked up once per connection the session holds: a
    commit or a rollback releases it, and the next statement looks again."""
    held = session.info.get(_RIDE)
    if held is not None and not held[0].closed and not held[0].invalidated:
        return held  # type: ignore[no-any-return]
    connection = await session.connection()
    driver = (await connection.get_raw_connection()).driver_connection
    if not isinstance(driver, psycopg.AsyncConnection):
        raise TypeError("a prebuilt statement needs psycopg's async connection")
    session.info[_RIDE] = held = (connection, driver)
    return held


async def _sent(
    connection: AsyncConnection,
    cursor: psycopg.AsyncCursor[Record],
    sql: str,
    values: dict[str, Any],
) -> None:
    """``cursor.execute``, with SQLAlchemy's rules for what goes wrong (module docstring)."""
    try:
        await cursor.execute(sql, values)
    except psycopg.Error as exc:
        # What SQLAlchemy's psycopg dialect counts as a disconnect (``is_disconnect``).
        gone = cursor.connection.closed or cursor.connection.broken
        if gone:
            await _invalidate(connection, exc)
        raise DBAPIError.instance(
            sql,
            values,
            exc,
            psycopg.Error,
            hide_parameters=True,
            connection_invalidated=gone,
            dialect=connection.dialect,
        ) from exc
    except BaseException as exc:
        if isinstance(exc, Exception):
            raise  # not the driver's: the connection is as it was
        # Interrupted mid-statement (a cancelled task): psycopg has cancelled it on the server,
        # and the connection's state is no longer known. It goes, as SQLAlchemy lets it go.
        await _invalidate(connection, None)
        raise


async def _invalidate(connection: AsyncConnection, exc: BaseException | None) -> None:
    """Close ``connection`` for good, even from a task being cancelled."""
    await asyncio.shield(asyncio.ensure_future(connection.invalidate(exc)))
