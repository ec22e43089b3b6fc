"""JSON logs and metrics from a real ``yuxi serve`` (issue 13): with ``YUXI_LOG_FORMAT=json``
every line the server writes is one JSON object, a run's lines carry its ``run_id`` and
``thread_id``, and planted secrets — a user's token (in a URL), the metrics token and the text
a user asked to remember — appear in no line."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest

from tests.support.server import LiveServer, create_user_with_token
from yuxi.bootstrap import Container

METRICS_TOKEN = "e2e-metrics-token-" + uuid.uuid4().hex
MEMORY_MARK = "MEMMARK-" + uuid.uuid4().hex


@pytest.fixture
def live_server_env() -> dict[str, str]:
    return {"YUXI_LOG_FORMAT": "json", "YUXI_METRICS_TOKEN": METRICS_TOKEN}


async def _log_lines(live_server: LiveServer, run_id: str) -> list[dict[str, Any]]:
    """Every line so far, parsed; waits (briefly) for the run's last line to be written."""
    for _ in range(50):
        text = live_server.log_path.read_text("utf-8")
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        if any(line.get("run_id") == run_id and "completed" in line["message"] for line in lines):
            return lines
        await asyncio.sleep(0.1)
    raise AssertionError(f"no completion line for {run_id}:\n{text[-4000:]}")


async def test_json_logs_carry_run_ids_and_never_a_token_or_memory_text(
    live_server: LiveServer, container: Container
) -> None:
    _uid, token = await create_user_with_token(container, "logs")
    async with live_server.client(token) as client:
        assert (await client.put("/api/v1/me/config", json={"enable_memory": True})).is_success
        thread = (await client.post("/api/v1/threads", json={})).json()["thread_id"]
        resp = await client.post(
            f"/api/v1/threads/{thread}/runs?wait=true",
            json={"input": f"remember: {MEMORY_MARK}"},
        )
        assert resp.status_code == 200, resp.text
        run = resp.json()
        assert run["status"] == "completed", run
    async with live_server.client() as anonymous:
        # a client that puts a credential in the URL: the access log must not keep it
        assert (await anonymous.get("/api/v1/me", params={"token": token})).status_code == 401
        assert (await anonymous.get("/metrics")).status_code == 401
        scrape = await anonymous.get(
            "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
        )
        assert scrape.status_code == 200
        assert 'yuxi_memory_writes_total{result="updated"} 1.0' in scrape.text
        assert 'yuxi_run_duration_seconds_count{status="completed"} 1.0' in scrape.text
        assert (await anonymous.get("/readyz")).status_code == 200

    lines = await _log_lines(live_server, run["run_id"])
    text = live_server.log_path.read_text("utf-8")
    for secret in (token, METRICS_TOKEN, MEMORY_MARK):
        assert secret not in text
    assert all({"ts", "level", "logger", "message"} <= set(line) for line in lines)
    of_run = [line for line in lines if line.get("run_id") == run["run_id"]]
    assert len(of_run) >= 2  # started, completed
    assert all(line["thread_id"] == thread for line in of_run)
    access = [line["message"] for line in lines if line["logger"] == "uvicorn.access"]
    assert any("/api/v1/me?token=REDACTED" in message for message in access), access
    assert any("/metrics" in message for message in access)
