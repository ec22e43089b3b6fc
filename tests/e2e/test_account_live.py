"""Deleting an account against a real ``yuxi serve``: the user's open event streams end (their
tokens are revoked, and the server's stream sweeper re-checks tokens on the revocation
notification), another user's stream stays open, and the deleted token is refused."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.support.server import LiveServer, create_user_with_token
from yuxi.bootstrap import Container

#: Only keeps a broken build from hanging the suite: the stream ends on the notification.
STREAM_END_GRACE_SECONDS = 20.0


@pytest.fixture
def idle_server(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> LiveServer:
    """A live server without workers: a submitted run stays pending, its stream stays open."""
    monkeypatch.setenv("YUXI_TEST_SERVER_WORKERS", "0")
    server: LiveServer = request.getfixturevalue("live_server")
    return server


async def _follow(client: httpx.AsyncClient, run_id: str, opened: asyncio.Event) -> list[str]:
    lines: list[str] = []
    headers = {"Accept": "text/event-stream"}
    async with client.stream("GET", f"/api/v1/runs/{run_id}/events", headers=headers) as resp:
        assert resp.status_code == 200
        async for line in resp.aiter_lines():
            lines.append(line)
            if line.startswith("data:"):
                opened.set()
    return lines


async def _pending_run(client: httpx.AsyncClient) -> str:
    thread = (await client.post("/api/v1/threads", json={})).json()["thread_id"]
    started = await client.post(f"/api/v1/threads/{thread}/runs", json={"input": "hello"})
    assert started.status_code == 202, started.text
    return str(started.json()["run_id"])


async def test_deleting_an_account_ends_its_open_event_streams(
    idle_server: LiveServer, container: Container
) -> None:
    uid, token = await create_user_with_token(container, "leaving")
    _, other_token = await create_user_with_token(container, "staying")
    no_timeout = httpx.Timeout(30.0, read=None)
    async with (
        httpx.AsyncClient(
            base_url=idle_server.base_url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=no_timeout,
        ) as leaving,
        httpx.AsyncClient(
            base_url=idle_server.base_url,
            headers={"Authorization": f"Bearer {other_token}"},
            timeout=no_timeout,
        ) as staying,
    ):
        run_id = await _pending_run(leaving)
        other_run = await _pending_run(staying)
        opened, other_opened = asyncio.Event(), asyncio.Event()
        follow = asyncio.create_task(_follow(leaving, run_id, opened))
        other_follow = asyncio.create_task(_follow(staying, other_run, other_opened))
        try:
            await asyncio.wait_for(asyncio.gather(opened.wait(), other_opened.wait()), 30)
            deleted = await leaving.request("DELETE", "/api/v1/me", json={"confirm": "leaving"})
            assert deleted.status_code == 200, deleted.text
            assert deleted.json()["deleted"]["uid"] == uid
            await asyncio.wait_for(follow, STREAM_END_GRACE_SECONDS)
            assert not other_follow.done()  # only the deleted user's stream ended
            assert (await leaving.get("/api/v1/me")).status_code == 401
            assert (await staying.get(f"/api/v1/runs/{other_run}")).json()["status"] == "pending"
        finally:
            for task in (follow, other_follow):
                task.cancel()
            await asyncio.gather(follow, other_follow, return_exceptions=True)
