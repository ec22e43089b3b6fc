"""A Core statement on a hot path, rendered once and run in one greenlet.

An agent's memory write runs two statements per call (the gate and the record), each on the hot
path of a tool call. :class:`PrebuiltStatement` runs such a statement in the unit of work's
session (its connection, its transaction), with SQLAlchemy's own error translation and cancellation
rules, but without the per-call work a Core statement costs there:

* it is compiled once per dialect (the SQL string and the values of its constant bind
  parameters), not looked up in the compiled cache by a cache key computed on every call;
* it runs with ``Connection.exec_driver_sql``: the parameters go to the driver as they are, with
  no bind processing per parameter. So a parameter the caller passes must be one the dialect
  does not convert (strings, integers, ``NULL``: rendering refuses a statement whose parameter
  would need a conversion); the statement's own constants are converted once, when rendered;
* the session's connection is looked up and the statement run in one greenlet
  (``AsyncSession.run_sync``), not one for the connection and one for the statement.

Result columns are read by the names the statement gives them.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy.engine import Dialect, Row
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session
from sqlalchemy.sql import Executable

__all__ = ["PrebuiltStatement"]


def _render(statement: Executable, dialect: Dialect) -> tuple[str, dict[str, Any]]:
    """Compile ``statement`` once, through SQLAlchemy's public compiler API: the SQL string,
    and its constants (``Compiled.params``) each converted by its type's bind processor
    (``TypeEngine.dialect_impl(dialect).bind_processor(dialect)``), found by its compiled name
    in ``SQLCompiler.binds``."""
    compiled = statement.compile(dialect=dialect)  # type: ignore[attr-defined]
    if compiled.positional:
        raise TypeError("a prebuilt statement needs a named paramstyle")
    constants: dict[str, Any] = {}
    for name, value in compiled.params.items():
        bind = compiled.binds.get(name)
        if bind is None:  # a name the compiler escaped: not found as the SQL spells it
            raise TypeError(f"parameter {name!r} cannot be prebuilt")
        process = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if value is None:
            # A caller's parameter: sent to the driver as it is, so it must need no processor.
            if process is not None:
                raise TypeError(f"parameter {name!r} would need a bind processor")
            continue
        # A constant of the statement: converted here, once.
        constants[name] = value if process is None else process(value)
    return compiled.string, constants


class PrebuiltStatement:
    """``statement`` as the driver's SQL string; :meth:`first` and :meth:`one` run it."""

    def __init__(self, statement: Executable) -> None:
        self.statement = statement
        self._rendered: WeakKeyDictionary[Dialect, tuple[str, dict[str, Any]]] = WeakKeyDictionary()

    def render(self, dialect: Dialect) -> tuple[str, dict[str, Any]]:
        """The SQL string for ``dialect`` and the values of the statement's own constants
        (anonymous bind parameters such as a ``literal``); the caller's parameters are added to
        those. Compiled on first use per dialect."""
        rendered = self._rendered.get(dialect)
        if rendered is None:
            rendered = self._rendered[dialect] = _render(self.statement, dialect)
        return rendered

    def _run(self, session: Session, params: dict[str, Any]) -> Any:
        connection = session.connection()
        sql, constants = self.render(connection.dialect)
        return connection.exec_driver_sql(sql, {**constants, **params})

    async def first(self, session: AsyncSession, params: dict[str, Any]) -> Row[Any] | None:
        """The first row the statement returns, if any."""
        return await session.run_sync(lambda s: self._run(s, params).first())

    async def one(self, session: AsyncSession, params: dict[str, Any]) -> Row[Any]:
        """The one row the statement returns (more or none raises)."""
        return await session.run_sync(lambda s: self._run(s, params).one())
