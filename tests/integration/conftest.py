"""Fixtures every integration module may use (on top of ``tests/support/postgres.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from yuxi.api.app import create_app
from yuxi.bootstrap import Container, build_worker, open_agent_runtime
from yuxi.db.engine import create_engine
from yuxi.runtime.worker import Worker


@pytest.fixture
async def worker(container: Container) -> AsyncIterator[Worker]:
    """One worker on the container's services, with the configured model and checkpointer."""
    async with open_agent_runtime(container) as runtime:
        yield build_worker(container, runtime, name="test-worker")


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """The app's engine (``yuxi.db.engine.create_engine``) with a pool of one connection, for
    tests that watch what happens to that connection."""
    engine = create_engine(database_url, pool_size=1)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture
async def client(container: Container) -> AsyncIterator[httpx.AsyncClient]:
    """The HTTP API on the container's services, in process (no worker: runs stay queued)."""
    app = create_app(container, workers=0)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://yuxi.test") as client:
        yield client
