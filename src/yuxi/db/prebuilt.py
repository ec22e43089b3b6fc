"""A Core statement on a hot path, rendered once and run in one greenlet.

The statements a run's record, its claim, its event stream and a memory write make are each run
many times per run. :class:`PrebuiltStatement` runs such a statement in the unit of work's
session (its connection, its transaction), with SQLAlchemy's own error translation and
cancellation rules, but without the per-call work a Core statement costs there:

* it is compiled once per dialect (the SQL string and the values of its constant bind
  parameters), not looked up in the compiled cache by a cache key computed on every call;
* it runs with ``Connection.exec_driver_sql``: no compiled-statement lookup, no ORM execution
  state, no result-type processing. The caller's parameters that the dialect converts (a JSON
  document: psycopg's ``Jsonb`` wrapper) go through the type's own bind processor, found once
  when rendered; the others go to the driver as they are. The statement's own constants are
  converted once, when rendered;
* the session's connection is looked up and the statement run in one greenlet
  (``AsyncSession.run_sync``), not one for the connection and one for the statement.

Result columns are read by the names the statement gives them, as the driver returns them (a
type whose result SQLAlchemy would convert cannot be read this way: only columns psycopg
returns as Python values already — text, numbers, timestamps, JSON — belong in such a
statement's result).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy.engine import Dialect, Row
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session
from sqlalchemy.sql import Executable

__all__ = ["PrebuiltStatement"]


Processors = dict[str, Callable[[Any], Any]]


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

    def _run(self, session: Session, params: dict[str, Any]) -> Any:
        connection = session.connection()
        rendered = self.render(connection.dialect)
        return connection.exec_driver_sql(rendered.sql, rendered.parameters(params))

    async def first(self, session: AsyncSession, params: dict[str, Any]) -> Row[Any] | None:
        """The first row the statement returns, if any."""
        return await session.run_sync(lambda s: self._run(s, params).first())

    async def one(self, session: AsyncSession, params: dict[str, Any]) -> Row[Any]:
        """The one row the statement returns (more or none raises)."""
        return await session.run_sync(lambda s: self._run(s, params).one())

    async def all(self, session: AsyncSession, params: dict[str, Any]) -> list[Row[Any]]:
        """Every row the statement returns."""
        return await session.run_sync(lambda s: list(self._run(s, params).all()))

    async def execute(self, session: AsyncSession, params: dict[str, Any]) -> int:
        """Run a statement that returns no rows; the number of rows it changed."""
        return await session.run_sync(lambda s: int(self._run(s, params).rowcount))
