"""The FastAPI application. :func:`create_app` takes a ready :class:`Container` (built by
``bootstrap``): the app never reads settings or creates engines itself."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Header
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from yuxi import __version__
from yuxi.api import (
    routes_files,
    routes_me,
    routes_memory,
    routes_runs,
    routes_search,
    routes_session,
    routes_threads,
    routes_trash,
)
from yuxi.api.bodies import BodyLimitMiddleware
from yuxi.api.errors import error_body, install_error_handlers
from yuxi.api.live import LiveStreams
from yuxi.bootstrap import Container, new_notifications, run_workers
from yuxi.observability.metrics import CONTENT_TYPE, exposition

STATIC_DIR = Path(__file__).resolve().parent.parent / "web" / "static"

#: The API's routers, in the order the app includes them.
API_ROUTERS = tuple(
    module.router
    for module in (
        routes_session,
        routes_me,
        routes_threads,
        routes_trash,
        routes_runs,
        routes_files,
        routes_memory,
        routes_search,
    )
)


class RefuseNulMiddleware:
    """A NUL in the path or query string can never name anything (PostgreSQL text cannot hold
    it, no file name contains it): refuse it with 400 before any route sees it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope.get("path", "")
            query = scope.get("query_string", b"").lower()
            if "\x00" in path or b"%00" in query or b"\x00" in query:
                response = JSONResponse(
                    error_body("invalid_argument", "NUL characters are not allowed in URLs"),
                    status_code=400,
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _metrics_response(container: Container, authorization: str | None) -> Response:
    secret = container.settings.metrics_token
    if secret is None:
        return JSONResponse(error_body("not_found", "Not Found"), status_code=404)
    scheme, _, offered = (authorization or "").partition(" ")
    expected = secret.get_secret_value().encode("utf-8")
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        offered.strip().encode("utf-8"), expected
    ):
        return JSONResponse(
            error_body("unauthorized", "a valid metrics token is required"),
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
    counts = await container.services.health.run_counts()
    return Response(exposition(container.metrics, counts), media_type=CONTENT_TYPE)


def create_app(container: Container, *, workers: int | None = None) -> FastAPI:
    """``workers`` in-process run workers (default: ``settings.workers``; 0 = none)."""
    count = container.settings.workers if workers is None else workers

    # One LISTEN connection for the process: its streams, waiters and workers share it. Made
    # here, started by the lifespan (an app used without one just never hears a notification).
    hub = new_notifications(container)
    live = LiveStreams(hub, container.services, poll_seconds=container.settings.poll_seconds)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        stop = asyncio.Event()
        pool: asyncio.Task[None] | None = None
        await hub.start()
        live.start()
        if count > 0:
            pool = asyncio.create_task(run_workers(container, count, stop, notifications=hub))
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
            await live.aclose()
            await hub.aclose()

    app = FastAPI(
        title="Yuxi Memory",
        version=__version__,
        lifespan=lifespan,
        openapi_url="/openapi.json",
    )
    app.state.container = container
    app.state.live = live
    install_error_handlers(app)
    app.add_middleware(BodyLimitMiddleware)
    app.add_middleware(RefuseNulMiddleware)

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        """Liveness: the process answers (the database is not asked), and its version."""
        return {"status": "ok", "version": __version__}

    @app.get(
        "/readyz",
        tags=["health"],
        responses={503: {"description": "the database does not answer"}},
    )
    async def readyz() -> JSONResponse:
        """Readiness: 200 when the database answers ``SELECT 1`` in time, else 503."""
        if await container.services.health.database_ready():
            return JSONResponse({"status": "ok", "database": "ok"})
        return JSONResponse({"status": "unavailable", "database": "unavailable"}, 503)

    @app.get("/metrics", include_in_schema=False)
    async def metrics(authorization: str | None = Header(default=None)) -> Response:
        """Prometheus text format, only when ``YUXI_METRICS_TOKEN`` is set (else 404) and only
        to ``Authorization: Bearer <that token>`` (else 401)."""
        return await _metrics_response(container, authorization)

    for router in API_ROUTERS:
        app.include_router(router)

    if STATIC_DIR.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

        @app.get("/", include_in_schema=False)
        async def index() -> FileResponse:
            return FileResponse(STATIC_DIR / "index.html")

    return app
