"""The unit of work: one database transaction and the repositories that work inside it.

Services are the only code that opens one; repositories never commit. Usage::

    async with self._uow() as uow:
        run = await uow.runs.get_owned(uid, run_id)
        await uow.events.append(run.id, "run_status", {"status": "cancelled"})
        await uow.commit()

Leaving the block without :meth:`UnitOfWork.commit` rolls back (a read-only block needs no
commit). A transaction-scoped advisory lock taken inside (``pg_advisory_xact_lock``) is held
until the block commits or rolls back.

:class:`DriverUnitOfWork` (``factory.driver()``) keeps that contract without an ORM session,
for the one path that is measured against its floor: an agent's memory write.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Self

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker

from yuxi.db.driver_statements import commit_driver, outside_transaction
from yuxi.identity import RunIdentity
from yuxi.repositories._memory_gate import MemoryWriteAuthorization, lock_memory_write
from yuxi.repositories._memory_version_writes import VersionWrites
from yuxi.repositories.agent_run_repository import AgentRunRepository
from yuxi.repositories.conversation_repository import ConversationRepository
from yuxi.repositories.health_repository import HealthRepository
from yuxi.repositories.memory_version_repository import MemoryVersionRepository
from yuxi.repositories.run_event_repository import RunEventRepository
from yuxi.repositories.token_repository import TokenRepository
from yuxi.repositories.tool_call_repository import ToolCallRepository
from yuxi.repositories.user_repository import UserRepository

__all__ = ["DriverUnitOfWork", "UnitOfWork", "UnitOfWorkFactory", "unit_of_work_factory"]


class UnitOfWork:
    users: UserRepository
    tokens: TokenRepository
    runs: AgentRunRepository
    conversations: ConversationRepository
    events: RunEventRepository
    tool_calls: ToolCallRepository
    memory_versions: MemoryVersionRepository
    health: HealthRepository

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions
        self._session: AsyncSession | None = None

    async def __aenter__(self) -> Self:
        session = self._sessions()
        self._session = session
        self.users = UserRepository(session)
        self.tokens = TokenRepository(session)
        self.runs = AgentRunRepository(session)
        self.conversations = ConversationRepository(session)
        self.events = RunEventRepository(session)
        self.tool_calls = ToolCallRepository(session)
        self.memory_versions = MemoryVersionRepository(session)
        self.health = HealthRepository(session)
        return self

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
        # Like AsyncSession.__aexit__: end the session in its own task, shielded, so that a
        # cancelled caller cannot leak a checked-out connection — and so that leaving a block
        # always yields to the event loop (a writer failing fast against a dead server must
        # not starve every other task). close() rolls back what was not committed, after
        # detaching every loaded row: rows a read-only block returns stay readable (an explicit
        # rollback() would expire them).
        await asyncio.shield(asyncio.ensure_future(session.close()))

    async def commit(self) -> None:
        """Commit everything done in this block. Once committed, the block is over."""
        if self._session is None:
            raise RuntimeError("commit() outside 'async with'")
        await self._session.commit()


class DriverUnitOfWork:
    """One transaction on one pooled connection, every statement sent with psycopg
    (:class:`~yuxi.db.driver_statements.DriverStatement`): an agent's memory write, and only
    that (the gate, the version statements, the commit).

    Why a second kind: that write is the hot path of ``remember_memory``, and an ORM session's
    begin, commit and close cost it ~0.3 ms of ~3.5 (benchmark B1). The contract is the
    :class:`UnitOfWork`'s: leaving the block without :meth:`commit` rolls back (the pool's reset
    on return does it), and the advisory lock taken inside is held until then.
    """

    memory_versions: VersionWrites

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._connection: AsyncConnection | None = None

    async def __aenter__(self) -> Self:
        try:
            self._connection = await self._engine.connect()
        except Exception:
            # psycopg fails against a stopped server (no socket) without ever awaiting: a writer
            # retrying in a loop would starve every other task, as UnitOfWork.__aexit__ notes.
            # A failure here always yields to the event loop once.
            await asyncio.sleep(0)
            raise
        self.memory_versions = VersionWrites(self._connection)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if outside_transaction(connection):
            # Committed (or never begun): the pool's reset sends nothing, so closing never
            # waits on the server and a cancellation has no await to land on. Closed inline,
            # not in a task of its own (one task and two loop turns less per agent write).
            await connection.close()
            return
        # A transaction is open (the write failed or was cancelled): the reset rolls it back on
        # the server. Shielded, as UnitOfWork.__aexit__: a cancelled caller must not leak the
        # connection (or the transaction and advisory lock on it).
        await asyncio.shield(asyncio.ensure_future(connection.close()))

    def _open(self) -> AsyncConnection:
        if self._connection is None:
            raise RuntimeError("DriverUnitOfWork used outside 'async with'")
        return self._connection

    async def lock_memory_write(self, identity: RunIdentity) -> MemoryWriteAuthorization:
        """The memory write gate (:func:`~yuxi.repositories._memory_gate.lock_memory_write`) in
        this transaction."""
        return await lock_memory_write(self._open(), identity)

    async def commit(self) -> None:
        """Commit everything done in this block. Once committed, the block is over."""
        await commit_driver(self._open())


class UnitOfWorkFactory:
    """Opens units of work on one engine: ``factory()`` a :class:`UnitOfWork`,
    ``factory.driver()`` a :class:`DriverUnitOfWork`."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        engine = sessions.kw.get("bind")
        if not isinstance(engine, AsyncEngine):
            raise TypeError("the session factory must be bound to an AsyncEngine")
        self._sessions, self._engine = sessions, engine

    def __call__(self) -> UnitOfWork:
        return UnitOfWork(self._sessions)

    def driver(self) -> DriverUnitOfWork:
        return DriverUnitOfWork(self._engine)


def unit_of_work_factory(sessions: async_sessionmaker[AsyncSession]) -> UnitOfWorkFactory:
    return UnitOfWorkFactory(sessions)
