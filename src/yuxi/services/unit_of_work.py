"""The unit of work: one database transaction and the repositories that work inside it.

Services are the only code that opens one; repositories never commit. Usage::

    async with self._uow() as uow:
        run = await uow.runs.get_owned(uid, run_id)
        await uow.events.append(run.id, "run_status", {"status": "cancelled"})
        await uow.commit()

Leaving the block without :meth:`UnitOfWork.commit` rolls back (a read-only block needs no
commit). A transaction-scoped advisory lock taken inside (``pg_advisory_xact_lock``) is held
until the block commits or rolls back.

A block that makes exactly one statement may be opened with
:meth:`UnitOfWorkFactory.one_statement` instead: its statement runs outside a transaction block
(autocommit), so neither ``BEGIN`` nor ``COMMIT``/``ROLLBACK`` is sent. A single statement is
atomic and sees one snapshot whether or not a transaction block surrounds it, so it does exactly
what it would in a transaction of its own: a read sees the same rows, a write (one
``UPDATE … RETURNING``, say) is all or nothing and commits as it ends — its locks last only as
long as the statement. A block of two statements must not use it (each would commit, and see,
on its own), nor one whose statement must hold a lock past its end. Such a block's prebuilt
statement (:mod:`yuxi.db.prebuilt`) rides a connection checked out of the pool for it, without a
session transaction, and the connection goes back as the pool lent it (out of autocommit) as the
block ends (:func:`yuxi.db.prebuilt.ride_the_pool`); an ORM statement in it runs on the session's
connection, autocommit by the session's bind.

Every write goes through it, an agent's memory write included (``uow.memory_gate``, then
``uow.memory_versions.record``): one kind of transaction, one set of error and cancellation
rules (SQLAlchemy's: a statement interrupted by a cancellation invalidates its connection, a
lost connection is an :class:`~sqlalchemy.exc.OperationalError`).
"""

from __future__ import annotations

import asyncio
from functools import cached_property
from types import TracebackType
from typing import Self

import psycopg
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from yuxi.db.prebuilt import release_the_pool, ride_the_pool
from yuxi.errors import StorageFull
from yuxi.repositories.account_repository import AccountRepository
from yuxi.repositories.backup_repository import BackupRepository
from yuxi.repositories.health_repository import HealthRepository
from yuxi.repositories.lookback import LookbackRepository
from yuxi.repositories.memory import MemoryGate
from yuxi.repositories.memory.version_repository import MemoryVersionRepository
from yuxi.repositories.runs.agent_run_repository import AgentRunRepository
from yuxi.repositories.runs.run_event_repository import RunEventRepository
from yuxi.repositories.runs.step_repository import RunStepRepository
from yuxi.repositories.runs.tool_call_repository import ToolCallRepository
from yuxi.repositories.thread_repository import ThreadRepository
from yuxi.repositories.token_repository import TokenRepository
from yuxi.repositories.trash_repository import TrashRepository
from yuxi.repositories.user_repository import UserRepository

__all__ = ["UnitOfWork", "UnitOfWorkFactory", "unit_of_work_factory"]


def _disk_full(exc: BaseException | None) -> bool:
    return isinstance(exc, DBAPIError) and isinstance(exc.orig, psycopg.errors.DiskFull)


class UnitOfWork:
    """One transaction (a ``one_statement`` block: one statement, autocommit) and its
    repositories, each made on first use in the block (a block uses few of them).
    ``one_statement_pool``, a one-statement block's: the engine whose pool lends its prebuilt
    statement a connection."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        one_statement_pool: AsyncEngine | None = None,
    ) -> None:
        self._sessions = sessions
        self._session: AsyncSession | None = None
        self._committed = False
        self._one_statement_pool = one_statement_pool

    async def __aenter__(self) -> Self:
        session = self._sessions()
        self._session = session
        if self._one_statement_pool is not None:
            # A one-statement block: a prebuilt statement rides a pool connection of its own,
            # in autocommit, without the session's transaction (yuxi.db.prebuilt.ride_the_pool);
            # an ORM statement runs on the session's connection, autocommit by its bind.
            ride_the_pool(session, self._one_statement_pool)
        return self

    def _open(self) -> AsyncSession:
        if self._session is None:
            raise RuntimeError("a repository outside 'async with'")
        return self._session

    @cached_property
    def users(self) -> UserRepository:
        return UserRepository(self._open())

    @cached_property
    def tokens(self) -> TokenRepository:
        return TokenRepository(self._open())

    @cached_property
    def runs(self) -> AgentRunRepository:
        return AgentRunRepository(self._open())

    @cached_property
    def threads(self) -> ThreadRepository:
        return ThreadRepository(self._open())

    @cached_property
    def lookback(self) -> LookbackRepository:
        return LookbackRepository(self._open())

    @cached_property
    def events(self) -> RunEventRepository:
        return RunEventRepository(self._open())

    @cached_property
    def steps(self) -> RunStepRepository:
        return RunStepRepository(self._open())

    @cached_property
    def tool_calls(self) -> ToolCallRepository:
        return ToolCallRepository(self._open())

    @cached_property
    def memory_versions(self) -> MemoryVersionRepository:
        return MemoryVersionRepository(self._open())

    @cached_property
    def memory_gate(self) -> MemoryGate:
        return MemoryGate(self._open())

    @cached_property
    def health(self) -> HealthRepository:
        return HealthRepository(self._open())

    @cached_property
    def backup(self) -> BackupRepository:
        return BackupRepository(self._open())

    @cached_property
    def accounts(self) -> AccountRepository:
        return AccountRepository(self._open())

    @cached_property
    def trash(self) -> TrashRepository:
        return TrashRepository(self._open())

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        session = self._session
        self._session = None
        if session is None:
            return
        if self._one_statement_pool is not None and exc is None:
            # A one-statement block that went well: its pool connection back at once (no I/O:
            # no transaction to end), and the session closed inline if it never began.
            await release_the_pool(session)
            if not session.in_transaction():
                session.sync_session.close()
                return
        if self._committed and not session.in_transaction():
            # Committed: the connection went back to the pool with the commit, so closing only
            # detaches the loaded rows — no I/O, so it needs neither the greenlet every awaited
            # session call runs in, nor a task to schedule and wait for, and a cancellation has
            # nothing to interrupt.
            session.sync_session.close()
            return
        # Like AsyncSession.__aexit__: end the session in its own task, shielded, so that a
        # cancelled caller cannot leak a checked-out connection (or the transaction and
        # advisory locks on it) — and so that leaving a failed block always yields to the event
        # loop (a writer failing fast against a dead server must not starve every other task).
        # close() rolls back what was not committed, after detaching every loaded row: rows a
        # read-only block returns stay readable (an explicit rollback() would expire them).
        await asyncio.shield(asyncio.ensure_future(_close(session)))
        if _disk_full(exc):
            # The database's disk is full (SQLSTATE 53100, raised by the statement that needed
            # the room): the transaction rolled back, so nothing of the block was saved — the
            # same promise, code and HTTP status as a full data dir (the embedded server keeps
            # its files in the data dir, so the two fill up together).
            raise StorageFull(
                "the database has no space left on its disk; nothing was saved"
            ) from exc

    async def commit(self) -> None:
        """Commit everything done in this block. Once committed, the block is over."""
        if self._session is None:
            raise RuntimeError("commit() outside 'async with'")
        await self._session.commit()
        self._committed = True


async def _close(session: AsyncSession) -> None:
    """Give back what the block holds: a pool connection its prebuilt statements rode (a
    one-statement block's), then the session's own."""
    try:
        await release_the_pool(session)
    finally:
        await session.close()


class UnitOfWorkFactory:
    """Opens a :class:`UnitOfWork` on one session factory: ``factory()``."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        engine = sessions.kw.get("bind")
        if not isinstance(engine, AsyncEngine):
            raise TypeError("the session factory must be bound to an AsyncEngine")
        self._sessions = sessions
        self._engine = engine
        # One-statement blocks: the same pool, each connection autocommit while checked out
        # (the pool restores the default isolation level when it is returned).
        self._one_statement_sessions = async_sessionmaker(
            engine.execution_options(isolation_level="AUTOCOMMIT"),
            **{k: v for k, v in sessions.kw.items() if k != "bind"},
        )

    def __call__(self) -> UnitOfWork:
        return UnitOfWork(self._sessions)

    def one_statement(self) -> UnitOfWork:
        """A unit of work for exactly one statement, a read or a write, sent without a
        transaction block (see the module's docstring)."""
        return UnitOfWork(self._one_statement_sessions, one_statement_pool=self._engine)


def unit_of_work_factory(sessions: async_sessionmaker[AsyncSession]) -> UnitOfWorkFactory:
    return UnitOfWorkFactory(sessions)
