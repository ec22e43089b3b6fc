"""The composition root: the one place that turns settings into live parts.

The API, the CLI, the workers and the tests all call :func:`bootstrap`; nothing else creates an
engine, reads settings or starts the embedded PostgreSQL. It builds one frozen
:class:`Services` — the only way down to storage — that every caller shares. What only running
agents need (the chat model, the LangGraph checkpointer and its connection pool) is opened on
demand by :func:`open_agent_runtime`, here too.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from yuxi.db.embedded import EmbeddedPostgres
from yuxi.db.engine import create_engine, create_session_factory, libpq_url
from yuxi.db.notifications import Notifications
from yuxi.limits import TRASH_PURGE_INTERVAL_SECONDS
from yuxi.observability.metrics import Metrics
from yuxi.runtime.agent_runtime import AgentRuntime, RunLimits
from yuxi.services.accounts import AccountService
from yuxi.services.backup import BackupService, RestoreService
from yuxi.services.chat.service import ChatService
from yuxi.services.health_service import HealthService
from yuxi.services.lookback.service import LookbackService
from yuxi.services.memory.service import MemoryService
from yuxi.services.memory.version_service import MemoryVersionService
from yuxi.services.runs.service import RunService
from yuxi.services.service_set import Services
from yuxi.services.unit_of_work import UnitOfWorkFactory, unit_of_work_factory
from yuxi.services.user_service import UserService
from yuxi.services.workspace_file_service import WorkspaceFileService
from yuxi.settings import Settings, load_settings
from yuxi.workspace.filesystem import Workspace

if TYPE_CHECKING:
    from yuxi.runtime.worker import Worker

__all__ = [
    "AgentRuntime",
    "Container",
    "Services",
    "bootstrap",
    "build_worker",
    "new_notifications",
    "open_agent_runtime",
    "open_notifications",
    "resolve_database_url",
    "run_workers",
]


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
    #: This process's metrics (one registry per container; see yuxi.observability.metrics).
    metrics: Metrics = field(default_factory=Metrics)
    _closed: bool = field(default=False, repr=False)

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

    metrics = Metrics(process=True)
    memory = MemoryService(
        uow,
        root,
        workspaces,
        writes_per_run=settings.memory_writes_per_run,
        bytes_per_run=settings.memory_bytes_per_run,
        metrics=metrics,
    )
    runs = RunService(uow, lease_seconds=settings.lease_seconds, metrics=metrics)
    memory_versions = MemoryVersionService(uow, workspaces)
    services = Services(
        chat=ChatService(uow, workspaces, trash_days=settings.trash_days),
        memory=memory,
        memory_versions=memory_versions,
        lookback=LookbackService(uow, metrics=metrics),
        users=UserService(uow, workspaces),
        files=WorkspaceFileService(workspaces, memory, runs, uow=uow),
        runs=runs,
        health=HealthService(uow),
        backup=BackupService(uow, root, url, embedded=embedded is not None),
        restore=RestoreService(uow, root, url, embedded=embedded is not None),
        # A deletion waits at most one lease for the user's runs to stop (a dead worker's lease
        # has run out by then).
        accounts=AccountService(
            uow, workspaces, memory_versions, settle_seconds=settings.lease_seconds
        ),
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
        metrics=metrics,
    )


@asynccontextmanager
async def open_agent_runtime(container: Container) -> AsyncIterator[AgentRuntime]:
    """The chat model and the LangGraph checkpointer (on its own psycopg pool, closed on exit).

    Only processes that execute runs open one (the worker pool, ``yuxi worker``, tests), so the
    API alone never imports the model stack or opens the checkpointer's pool.
    """
    from yuxi.agents.models.factory import build_chat_model
    from yuxi.db.checkpointer import open_checkpointer

    settings = container.settings
    limits = RunLimits(
        model_calls=settings.run_model_call_limit,
        tool_calls=settings.run_tool_call_limit,
        timeout_seconds=settings.run_timeout_seconds,
    )
    async with open_checkpointer(container.database_url) as checkpointer:
        yield AgentRuntime(
            model=build_chat_model(settings),
            checkpointer=checkpointer,
            limits=limits,
            metrics=container.metrics,
        )


def new_notifications(container: Container) -> Notifications:
    """A listener for this process, not started yet (:meth:`Notifications.start`)."""
    return Notifications(container.database_url, keepalive_seconds=container.settings.poll_seconds)


@asynccontextmanager
async def open_notifications(container: Container) -> AsyncIterator[Notifications]:
    """The process's one LISTEN connection (``yuxi.db.notifications``), listening on exit of
    the ``async with`` line (or retrying in the background), closed at the end."""
    hub = new_notifications(container)
    await hub.start()
    try:
        yield hub
    finally:
        await hub.aclose()


def build_worker(
    container: Container,
    runtime: AgentRuntime,
    *,
    name: str = "worker",
    notifications: Notifications | None = None,
) -> Worker:
    """One worker wired to the container's services, the runtime and the workspaces; woken by
    ``notifications`` when given (else it only polls, every ``poll_seconds``)."""
    from yuxi.runtime.worker import Worker  # the agent stack loads only where runs execute

    return Worker(
        container.services,
        runtime,
        container.workspace,
        heartbeat_seconds=container.settings.heartbeat_seconds,
        name=name,
        notifications=notifications,
        concurrency=container.settings.worker_concurrency,
    )


async def run_workers(
    container: Container,
    count: int,
    stop: asyncio.Event,
    *,
    notifications: Notifications | None = None,
) -> None:
    """A pool of ``count`` workers in this process until ``stop`` is set, woken by the
    process's listener (``notifications``; one is opened here when none is given), and the
    trash's purge job beside it (``yuxi.runtime.trash_purge``)."""
    from yuxi.runtime.trash_purge import purge_trash_periodically
    from yuxi.runtime.worker import run_pool  # the agent stack loads only where runs execute

    async with contextlib.AsyncExitStack() as stack:
        if notifications is None:
            notifications = await stack.enter_async_context(open_notifications(container))
        runtime = await stack.enter_async_context(open_agent_runtime(container))
        workers = [
            build_worker(container, runtime, name=f"worker-{i}", notifications=notifications)
            for i in range(count)
        ]
        purge = asyncio.create_task(
            purge_trash_periodically(
                container.services.chat.trash, stop, interval=TRASH_PURGE_INTERVAL_SECONDS
            )
        )
        try:
            await run_pool(
                workers,
                stop,
                notifications=notifications,
                poll_seconds=container.settings.poll_seconds,
            )
        finally:  # the pool is done (stopped or failed): so is its purge job
            purge.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await purge
