"""``/metrics`` is off unless ``YUXI_METRICS_TOKEN`` is set, and then answers only to that
Bearer token; ``/readyz`` is 503 while the database does not answer; ``/healthz`` never asks it.

No server here: the container points at a port where nothing listens (the engine connects
lazily, so building it succeeds and every query fails)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import httpx
import pytest

import yuxi
from yuxi.api.app import create_app
from yuxi.bootstrap import bootstrap
from yuxi.observability.metrics import CONTENT_TYPE
from yuxi.settings import Settings

METRICS_TOKEN = "scrape-me-please-0123456789"
Client = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def client(tmp_path: Path) -> Client:
    @asynccontextmanager
    async def open_client(**settings: object) -> AsyncIterator[httpx.AsyncClient]:
        container = await bootstrap(
            Settings(
                database_url="postgresql://yuxi@127.0.0.1:1/yuxi",
                data_dir=tmp_path / "data",
                **settings,  # type: ignore[arg-type]
            )
        )
        transport = httpx.ASGITransport(app=create_app(container, workers=0))
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
                yield c
        finally:
            await container.aclose()

    return open_client


async def test_metrics_are_refused_by_default(client: Client) -> None:
    async with client() as c:
        resp = await c.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        assert resp.status_code == 404
        assert resp.json()["error"]["code"] == "not_found"
        assert "/metrics" not in (await c.get("/openapi.json")).json()["paths"]


async def test_metrics_answer_only_to_the_configured_bearer_token(client: Client) -> None:
    async with client(metrics_token=METRICS_TOKEN) as c:
        for headers in (
            {},
            {"Authorization": "Bearer wrong-token-0123456789"},
            {"Authorization": f"Bearer {METRICS_TOKEN}x"},
            {"Authorization": f"Basic {METRICS_TOKEN}"},
            {"Authorization": METRICS_TOKEN},
        ):
            resp = await c.get("/metrics", headers=headers)
            assert resp.status_code == 401, headers
            assert resp.headers["www-authenticate"] == "Bearer"
            assert METRICS_TOKEN not in resp.text
        ok = await c.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        assert ok.status_code == 200
        assert ok.headers["content-type"] == CONTENT_TYPE
        # the database is down: the scrape still answers, and says so
        assert "yuxi_database_up 0.0" in ok.text
        assert "yuxi_runs{" not in ok.text
        for name in (
            "yuxi_run_duration_seconds",
            "yuxi_run_time_to_first_token_seconds",
            "yuxi_memory_writes_total",
            "yuxi_memory_lock_wait_seconds",
            "yuxi_lease_reconciles_total",
            "yuxi_history_tool_seconds",
            "yuxi_sse_streams_open",
            "process_cpu_seconds_total",
        ):
            assert f"# TYPE {name} " in ok.text, name


async def test_readyz_is_503_while_the_database_does_not_answer_and_healthz_stays_200(
    client: Client,
) -> None:
    async with client() as c:
        ready = await c.get("/readyz")
        assert ready.status_code == 503
        assert ready.json() == {"status": "unavailable", "database": "unavailable"}
        assert (await c.get("/healthz")).json() == {"status": "ok", "version": yuxi.__version__}


def test_a_short_metrics_token_is_a_configuration_error() -> None:
    with pytest.raises(ValueError):
        Settings(metrics_token="short")
    assert Settings(metrics_token="  ").metrics_token is None  # compose's unset variable
