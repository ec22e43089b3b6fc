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
  back, and returns it; the statement only rides on it. A one-statement block's statement
  (autocommit: no transaction to own) rides a connection checked out of the same pool for it
  instead, with the pool's own checkout and check-in (:func:`ride_the_pool`).

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
from psycopg.pq import TransactionStatus
from psycopg.rows import namedtuple_row
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError, MultipleResultsFound, NoResultFound
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.sql import Executable
from sqlalchemy.util import greenlet_spawn

__all__ = ["PrebuiltStatement", "release_the_pool", "ride_the_pool"]


Processors = dict[str, Callable[[Any], Any]]
#: A row of a prebuilt statement: a named tuple of its columns.
Record = Any

#: Where a session keeps the connection its prebuilt statements ride on (``Session.info``).
_RIDE = "yuxi.prebuilt.connection"
#: Where a one-statement block's session keeps the engine whose pool lends its prebuilt
#: statements a connection (:func:`ride_the_pool`).
_LANE = "yuxi.prebuilt.pool"


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
        ride = await _ride(session)
        rendered = self.render(ride.dialect)
        values = rendered.parameters(params)
        cursor = ride.driver.cursor(row_factory=namedtuple_row)
        try:
            await _sent(ride, cursor, rendered.sql, values)
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


class _Ride:
    """A connection prebuilt statements ride on: the driver's connection under it, its dialect,
    whether it is still usable, and how to close it for good."""

    __slots__ = ("dialect", "driver")

    def __init__(self, driver: psycopg.AsyncConnection[Any], dialect: Dialect) -> None:
        self.driver = driver
        self.dialect = dialect

    def usable(self) -> bool:
        raise NotImplementedError

    async def invalidate(self, exc: BaseException | None) -> None:
        """Close the connection for good (the pool never hands it out again), even from a
        task being cancelled."""
        raise NotImplementedError


def _driver_of(connection: Any) -> psycopg.AsyncConnection[Any]:
    if not isinstance(connection, psycopg.AsyncConnection):
        raise TypeError("a prebuilt statement needs psycopg's async connection")
    return connection


class _SessionRide(_Ride):
    """The session's own connection, in the session's transaction."""

    __slots__ = ("connection",)

    def __init__(self, connection: AsyncConnection, driver: psycopg.AsyncConnection[Any]) -> None:
        super().__init__(driver, connection.dialect)
        self.connection = connection

    def usable(self) -> bool:
        return not self.connection.closed and not self.connection.invalidated

    async def invalidate(self, exc: BaseException | None) -> None:
        await asyncio.shield(asyncio.ensure_future(self.connection.invalidate(exc)))


class _PoolRide(_Ride):
    """A connection checked out of the engine's pool for a one-statement block, in autocommit
    for as long as the block holds it (see :func:`ride_the_pool`)."""

    __slots__ = ("fairy",)

    def __init__(self, fairy: PoolProxiedConnection, dialect: Dialect) -> None:
        super().__init__(_driver_of(fairy.driver_connection), dialect)
        self.fairy = fairy

    @classmethod
    async def checkout(cls, engine: AsyncEngine) -> _PoolRide:
        # The pool's own checkout (its events, the idle ping, a new connection when it must)
        fairy = await engine.raw_connection()
        try:
            ride = cls(fairy, engine.dialect)
            await ride.driver.set_autocommit(True)  # no I/O: the connection is idle
        except BaseException:
            await greenlet_spawn(fairy.invalidate)
            await greenlet_spawn(fairy.close)
            raise
        return ride

    def usable(self) -> bool:
        return self.fairy.is_valid

    async def invalidate(self, exc: BaseException | None) -> None:
        await asyncio.shield(asyncio.ensure_future(greenlet_spawn(self.fairy.invalidate, exc)))

    async def release(self) -> None:
        """Give the connection back as the pool lent it: out of autocommit, or, when its state
        is not known (closed, broken, inside a transaction), invalidated."""
        fairy, driver = self.fairy, self.driver
        if fairy.is_valid:
            if driver.broken or driver.pgconn.transaction_status != TransactionStatus.IDLE:
                await self.invalidate(None)
            else:
                await driver.set_autocommit(False)  # no I/O: the connection is idle
        # Checked in: the pool's reset finds no transaction to roll back (no round trip).
        await greenlet_spawn(fairy.close)


def ride_the_pool(session: AsyncSession, engine: AsyncEngine) -> None:
    """Let the prebuilt statements of ``session``, a one-statement block's, ride a connection
    checked out of ``engine``'s pool for them, in autocommit, instead of the session's own.

    The session's connection costs a session transaction, an isolation level set and reset
    through greenlets, and a shielded close; the pool's connection costs its checkout and its
    check-in. The rules stay SQLAlchemy's: the pool's checkout events (the idle ping) run, an
    error is ``DBAPIError``, a lost or interrupted connection is invalidated. A statement the
    session runs itself (an ORM query) still uses the session's own connection, which must then
    be autocommit too (the session's bind says so). The block gives the connection back with
    :func:`release_the_pool`."""
    session.info[_LANE] = engine


async def release_the_pool(session: AsyncSession) -> None:
    """Give back the pool connection :func:`ride_the_pool` let ``session`` take, if it took
    one."""
    ride = session.info.pop(_RIDE, None)
    if isinstance(ride, _PoolRide):
        await ride.release()


async def _ride(session: AsyncSession) -> _Ride:
    """The connection the session's prebuilt statements ride on: its own (begun, as any
    statement of the session would begin it), or one of the pool's for a one-statement block
    (:func:`ride_the_pool`). Looked up once per connection the session holds: a commit or a
    rollback releases it, and the next statement looks again."""
    info = session.info
    held: _Ride | None = info.get(_RIDE)
    if held is not None:
        if held.usable():
            return held
        if isinstance(held, _PoolRide):
            # Lost: its invalidation (``_sent``) already gave it back to the pool, and the
            # block takes another below.
            del info[_RIDE]
    engine = info.get(_LANE)
    ride: _Ride
    if engine is not None and not session.in_transaction():
        ride = await _PoolRide.checkout(engine)
    else:
        connection = await session.connection()
        raw = await connection.get_raw_connection()
        ride = _SessionRide(connection, _driver_of(raw.driver_connection))
    info[_RIDE] = ride
    return ride


async def _sent(
    ride: _Ride,
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
            await ride.invalidate(exc)
        raise DBAPIError.instance(
            sql,
            values,
            exc,
            psycopg.Error,
            hide_parameters=True,
            connection_invalidated=gone,
            dialect=ride.dialect,
        ) from exc
    except BaseException as exc:
        if isinstance(exc, Exception):
            raise  # not the driver's: the connection is as it was
        # Interrupted mid-statement (a cancelled task): psycopg has cancelled it on the server,
        # and the connection's state is no longer known. It goes, as SQLAlchemy lets it go.
        await ride.invalidate(None)
        raise
