"""Fixtures every integration module may use (on top of ``tests/fixtures_pg.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from yuxi.bootstrap import Container, build_worker, open_agent_runtime
from yuxi.runtime.worker import Worker


@pytest.fixture
async def worker(container: Container) -> AsyncIterator[Worker]:
    """One worker on the container's services, with the configured model and checkpointer."""
    async with open_agent_runtime(container) as runtime:
        yield build_worker(container, runtime, name="test-worker")
