"""No request of the API runs anything in FastAPI's thread pool.

FastAPI calls a plain ``def`` endpoint or dependency through its thread pool: a hop to a worker
thread and back to the event loop on every request, for what here is an attribute read or a
header check. Every endpoint and every dependency of every route (its sub-dependencies too) is
therefore a coroutine function, or an object whose ``__call__`` is one (``HTTPBearer``)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from yuxi.api.app import API_ROUTERS, create_app
from yuxi.bootstrap import bootstrap
from yuxi.settings import Settings


def _runs_on_the_loop(call: Any) -> bool:
    # A class instance (``HTTPBearer``): its ``__call__``, as FastAPI calls it.
    return inspect.iscoroutinefunction(call) or inspect.iscoroutinefunction(call.__call__)


def _calls(dependant: Dependant, where: str) -> Iterator[tuple[str, Any]]:
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield (
                f"{where} ← {getattr(sub.call, '__qualname__', type(sub.call).__name__)}",
                sub.call,
            )
        yield from _calls(sub, where)


async def test_every_endpoint_and_dependency_is_a_coroutine(tmp_path: Path) -> None:
    container = await bootstrap(
        Settings(database_url="postgresql://yuxi@127.0.0.1:1/yuxi", data_dir=tmp_path / "data")
    )
    try:
        app = create_app(container, workers=0)
        # The app's own routes, and those of the routers it includes (FastAPI keeps an included
        # router's routes behind an inclusion object of its own in ``app.routes``).
        every = [*app.routes, *(r for router in API_ROUTERS for r in router.routes)]
        routes = [r for r in every if isinstance(r, APIRoute)]
        assert len(routes) > 20  # the API's routes, not an empty list that passes anything
        in_pool = []
        for route in routes:
            where = f"{sorted(route.methods or ())} {route.path}"
            if not _runs_on_the_loop(route.endpoint):
                in_pool.append(where)
            in_pool += [
                n for n, call in _calls(route.dependant, where) if not _runs_on_the_loop(call)
            ]
        assert in_pool == []
    finally:
        await container.aclose()
