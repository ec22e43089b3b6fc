"""The FastAPI application. :func:`create_app` takes a ready :class:`Container` (built by
``bootstrap``): the app never reads settings or creates engines itself."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from yuxi.api import routes_files, routes_me, routes_runs, routes_threads
from yuxi.api.errors import install_error_handlers
from yuxi.bootstrap import Container

STATIC_DIR = Path(__file__).resolve().parent.parent / "web" / "static"


def create_app(container: Container, *, workers: int | None = None) -> FastAPI:
    """``workers`` in-process run workers (default: ``settings.workers``; 0 = none)."""
    count = container.settings.workers if workers is None else workers

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        stop = asyncio.Event()
        pool: asyncio.Task[None] | None = None
        if count > 0:
            from yuxi.runtime.worker import run_workers

            pool = asyncio.create_task(run_workers(container, count, stop))
        try:
            yield
        finally:
            stop.set()
            if pool is not None:
                try:
                    await asyncio.wait_for(pool, timeout=10)
                except (TimeoutError, asyncio.CancelledError):
                    pool.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await pool

    app = FastAPI(
        title="Yuxi Memory",
        version="0.1.0",
        lifespan=lifespan,
        openapi_url="/openapi.json",
    )
    app.state.container = container
    install_error_handlers(app)

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    for module in (routes_me, routes_threads, routes_runs, routes_files):
        app.include_router(module.router)

    if STATIC_DIR.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

        @app.get("/", include_in_schema=False)
        async def index() -> FileResponse:
            return FileResponse(STATIC_DIR / "index.html")

    return app
