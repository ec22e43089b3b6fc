"""Event streams and ``?wait=true`` are fed by the process's one listener, not by polling.

The server runs with ``YUXI_POLL_SECONDS=3600``: with the safety net an hour away, everything
below that finishes in time was woken by a notification — a new pending run (the workers), a
run event (streams and waiters), a revocation (streams) — or by a token's expiry, which the
stream sweeper computes from the database's ``expires_at``.
"""

from __future__ import annotations

import asyncio
import hashlib

import httpx
import pytest
from sqlalchemy import text

from tests.support.server import LiveServer, create_user_with_token
from tests.support.sse import iter_events, read_events
from yuxi.bootstrap import Container

#: Only keeps a broken build from hanging the suite (the wait itself would take 120 s).
GIVE_UP_SECONDS = 60.0


@pytest.fixture
def notified_server(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> LiveServer:
    monkeypatch.setenv("YUXI_TEST_SERVER_POLL_SECONDS", "3600")
    monkeypatch.setenv("YUXI_TEST_SERVER_WORKERS", "2")
    server: LiveServer = request.getfixturevalue("live_server")
    return server


@pytest.fixture
def idle_notified_server(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> LiveServer:
    """No workers: a submitted run stays pending and its streams stay open."""
    monkeypatch.setenv("YUXI_TEST_SERVER_POLL_SECONDS", "3600")
    monkeypatch.setenv("YUXI_TEST_SERVER_WORKERS", "0")
    server: LiveServer = request.getfixturevalue("live_server")
    return server


async def _thread(client: httpx.AsyncClient) -> str:
    resp = await client.post("/api/v1/threads", json={})
    assert resp.status_code == 201, resp.text
    return str(resp.json()["thread_id"])


async def test_wait_and_streams_are_woken_by_notifications(
    notified_server: LiveServer, container: Container
) -> None:
    _, token = await create_user_with_token(container, "fan")
    async with notified_server.client(token, timeout=GIVE_UP_SECONDS) as client:
        thread = await _thread(client)
        waited = await client.post(f"/api/v1/threads/{thread}/runs?wait=true", json={"input": "hi"})
        assert waited.status_code == 200 and waited.json()["status"] == "completed", waited.text

        # Three streams on one run, opened before it is claimed: one fan-out feeds them all.
        started = await client.post(f"/api/v1/threads/{thread}/runs", json={"input": "again"})
        run_id = started.json()["run_id"]
        streams = await asyncio.wait_for(
            asyncio.gather(*(read_events(client, run_id) for _ in range(3))), GIVE_UP_SECONDS
        )
        first = streams[0]
        assert first == streams[1] == streams[2]
        assert [e["seq"] for e in first] == list(range(1, len(first) + 1))
        assert first[-1]["type"] == "run_status" and first[-1]["data"]["status"] == "completed"
        assert any(e["type"] == "token" for e in first)
        # and the replay after Last-Event-ID is the same record
        assert await read_events(client, run_id, last_event_id=2) == first[2:]


async def test_a_stream_ends_on_revocation_and_on_expiry_without_the_poll(
    idle_notified_server: LiveServer, container: Container
) -> None:
    server = idle_notified_server
    users = container.services.users
    uid, owner_token = await create_user_with_token(container, "gone")
    revoked_token = (await users.create_token(uid, label="a")).token
    expiring_token = (await users.create_token(uid, label="b")).token
    async with container.session_factory() as s, s.begin():
        await s.execute(
            text(
                "UPDATE api_tokens SET expires_at = now() + interval '4 seconds' "
                "WHERE token_hash = :h"
            ),
            {"h": hashlib.sha256(expiring_token.encode()).hexdigest()},
        )
    async with server.client(owner_token) as owner:
        thread = await _thread(owner)
        run = await owner.post(f"/api/v1/threads/{thread}/runs", json={"input": "hello"})
        assert run.json()["status"] == "pending", run.text
        run_id = run.json()["run_id"]

    async def follow(token: str, opened: asyncio.Event) -> int:
        """The events of one stream; ``opened`` is set once its first event arrived (the
        stream is then watched: the server registers it before its first read)."""
        count = 0
        async with (
            httpx.AsyncClient(
                base_url=server.base_url,
                headers={"Authorization": f"Bearer {token}", "Accept": "text/event-stream"},
                timeout=httpx.Timeout(30.0, read=None),
            ) as c,
            c.stream("GET", f"/api/v1/runs/{run_id}/events") as resp,
        ):
            assert resp.status_code == 200, await resp.aread()
            async for _ in iter_events(resp):
                count += 1
                opened.set()
        return count

    revoked_open, expiring_open = asyncio.Event(), asyncio.Event()
    revoked = asyncio.create_task(follow(revoked_token, revoked_open))
    expiring = asyncio.create_task(follow(expiring_token, expiring_open))
    try:
        # Both streams are open and watched before the revocation, so what ends them below
        # is the revocation's notification and the expiry, nothing that came before.
        await asyncio.wait_for(
            asyncio.gather(revoked_open.wait(), expiring_open.wait()), GIVE_UP_SECONDS
        )
        assert not revoked.done()
        assert await users.revoke_tokens(uid, await _token_id(container, uid, revoked_token))
        assert await asyncio.wait_for(revoked, GIVE_UP_SECONDS) > 0
        assert await asyncio.wait_for(expiring, GIVE_UP_SECONDS) > 0
    finally:
        for task in (revoked, expiring):
            task.cancel()
        await asyncio.gather(revoked, expiring, return_exceptions=True)


async def _token_id(container: Container, uid: str, token: str) -> int:
    digest = hashlib.sha256(token.encode()).hexdigest()
    async with container.session_factory() as s:
        row = await s.execute(
            text("SELECT id FROM api_tokens WHERE uid = :u AND token_hash = :h"),
            {"u": uid, "h": digest},
        )
        return int(row.scalar_one())
