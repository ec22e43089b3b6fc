"""Metrics and readiness against a real PostgreSQL and real runs: what a scrape reports after
chats that remember and search, a reconciled lease and a pending run — and that no label
carries a user, a thread or any text."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from tests.support.factories import chat_once, make_run, make_user, sql
from yuxi.api.app import create_app
from yuxi.bootstrap import Container, bootstrap, build_worker, open_agent_runtime
from yuxi.settings import Settings
from yuxi.vocabulary import LEASE_EXPIRED

METRICS_TOKEN = "integration-scrape-token-0123"
MARK = "OBSMARK-green-tea"


@pytest.fixture
async def observed(settings: Settings) -> AsyncIterator[Container]:
    c = await bootstrap(settings.model_copy(update={"metrics_token": SecretStr(METRICS_TOKEN)}))
    try:
        yield c
    finally:
        await c.aclose()


def _scrape(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


async def test_readyz_is_200_when_the_database_answers(container: Container) -> None:
    transport = httpx.ASGITransport(app=create_app(container, workers=0))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        resp = await client.get("/readyz")
    assert resp.status_code == 200
    assert resp.json() == {"status": "ok", "database": "ok"}


async def test_a_scrape_after_real_runs(observed: Container) -> None:
    c = observed
    uid = await make_user(c, memory=True)
    thread_id = (await c.services.chat.create_thread(uid, title="obs")).thread_id
    async with open_agent_runtime(c) as runtime:
        worker = build_worker(c, runtime, name="obs-worker")
        first = await chat_once(c, worker, uid, thread_id, f"remember: {MARK}")
        second = await chat_once(c, worker, uid, thread_id, "search history: green tea")
        assert (first.status, second.status) == ("completed", "completed")
        lost = await make_run(c, uid)  # claimed by a worker that then disappears
        await sql(
            c,
            "UPDATE agent_runs SET lease_expires_at = now() - interval '1 second' WHERE id = :id",
            id=lost.run_id,
        )
        assert await worker.reconcile() == [lost.run_id]
    pending, _ = await c.services.chat.submit(uid, thread_id, "still waiting")

    token = (await c.services.users.create_token(uid, label="obs")).token
    transport = httpx.ASGITransport(app=create_app(c, workers=0))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        events = await client.get(
            f"/api/v1/runs/{first.id}/events", headers={"Authorization": f"Bearer {token}"}
        )
        assert events.status_code == 200 and "run_status" in events.text
        resp = await client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert resp.status_code == 200
    text = resp.text
    samples = _scrape(text)

    # cluster-wide, from the database
    assert samples[("yuxi_database_up", ())] == 1
    assert samples[("yuxi_runs", (("status", "completed"),))] == 2
    assert samples[("yuxi_runs", (("status", "failed"),))] == 1
    assert samples[("yuxi_runs", (("status", "pending"),))] == 1
    assert samples[("yuxi_runs", (("status", "running"),))] == 0
    # this process
    assert samples[("yuxi_run_duration_seconds_count", (("status", "completed"),))] == 2
    assert samples[("yuxi_run_duration_seconds_count", (("status", "failed"),))] == 0
    assert samples[("yuxi_run_time_to_first_token_seconds_count", ())] == 2
    assert samples[("yuxi_memory_writes_total", (("result", "updated"),))] == 1
    assert samples[("yuxi_memory_lock_wait_seconds_count", ())] == 1
    assert samples[("yuxi_lease_reconciles_total", (("code", LEASE_EXPIRED),))] == 1
    tool = (("tool", "search_thread_messages"),)
    assert samples[("yuxi_history_tool_seconds_count", tool)] == 1
    assert samples[("yuxi_sse_streams_open", ())] == 0  # the stream above has ended
    # never a user, a thread, a run or any text in a label
    for secret in (uid, thread_id, first.id, pending.id, MARK, "green"):
        assert secret not in text, secret
