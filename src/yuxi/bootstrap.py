"""The composition root: the one place that turns settings into live parts.

The API, the CLI, the workers and the tests all call :func:`bootstrap`; nothing else creates an
engine, reads settings or starts the embedded PostgreSQL. It builds one frozen
:class:`Services` — the only way down to storage — that every caller shares.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from yuxi.db.embedded import EmbeddedPostgres
from yuxi.db.engine import create_engine, create_session_factory, libpq_url
from yuxi.services.chat_service import ChatService
from yuxi.services.lookback_service import LookbackService
from yuxi.services.memory_service import MemoryService
from yuxi.services.unit_of_work import UnitOfWorkFactory, unit_of_work_factory
from yuxi.settings import Settings, load_settings
from yuxi.workspace.filesystem import Workspace


@dataclass(frozen=True)
class Services:
    """Every service, built once. Routes, workers, the CLI and tests call these and nothing
    below them (no session, no repository, no SQL)."""

    chat: ChatService
    memory: MemoryService
    lookback: LookbackService


@dataclass
class Container:
    settings: Settings
    database_url: str
    engine: AsyncEngine
    session_factory: async_sessionmaker[AsyncSession]
    workspace_root: Path
    uow: UnitOfWorkFactory
    services: Services
    embedded: EmbeddedPostgres | None = None
    _closed: bool = field(default=False, repr=False)

    @property
    def memory(self) -> MemoryService:
        return self.services.memory

    def workspace(self, uid: str) -> Workspace:
        return Workspace(self.workspace_root, uid)

    async def aclose(self, *, stop_embedded: bool = False) -> None:
        if self._closed:
            return
        self._closed = True
        await self.engine.dispose()
        if stop_embedded and self.embedded is not None and self.embedded.started_by_us:
            self.embedded.stop()


def resolve_database_url(settings: Settings) -> tuple[str, EmbeddedPostgres | None]:
    """The external URL when configured, else the embedded server's (started or reused)."""
    if settings.database_url:
        return libpq_url(settings.database_url), None
    embedded = EmbeddedPostgres(settings.pgdata_dir)
    return embedded.start(), embedded


async def bootstrap(settings: Settings | None = None, *, migrate: bool = False) -> Container:
    settings = settings if settings is not None else load_settings()
    url, embedded = resolve_database_url(settings)
    if migrate:
        from yuxi.db.migrate import upgrade

        await upgrade(url)
    engine = create_engine(url, pool_size=settings.db_pool_size)
    root = settings.workspace_root
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    sessions = create_session_factory(engine)
    uow = unit_of_work_factory(sessions)

    def workspaces(uid: str) -> Workspace:
        return Workspace(root, uid)

    services = Services(
        chat=ChatService(sessions),
        memory=MemoryService(uow, root, workspaces),
        lookback=LookbackService(uow),
    )
    return Container(
        settings=settings,
        database_url=url,
        engine=engine,
        session_factory=sessions,
        workspace_root=root,
        uow=uow,
        services=services,
        embedded=embedded,
    )
