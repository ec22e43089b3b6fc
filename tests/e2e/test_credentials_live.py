"""Credentials against a real ``yuxi serve`` (issue 10 §4): the login-code exchange over HTTP,
no credential in the access log, and an open event stream that ends once its token is revoked
or expires."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from tests.support.server import LiveServer, create_user_with_token, free_port
from yuxi.bootstrap import Container
from yuxi.cli import DEMO_UID
from yuxi.settings import Settings
from yuxi.vocabulary import SESSION_TOKEN_LABEL, TOKEN_PREFIX

MARK = "SECRETMARK"
#: How long a stream may take to notice a revoked token before the test gives up on it (the
#: server re-checks at once on the revocation's notification and at the token's expiry; this
#: only keeps a broken build from hanging the suite).
STREAM_END_GRACE_SECONDS = 20.0


async def _session(live_server: LiveServer, container: Container, uid: str) -> str:
    code = (await container.services.users.issue_login_code(uid)).code
    async with live_server.client() as anonymous:
        resp = await anonymous.post("/api/v1/session", json={"login_code": code})
    assert resp.status_code == 201, resp.text
    return str(resp.json()["token"])


async def test_a_login_code_is_exchanged_once_over_http(
    live_server: LiveServer, container: Container
) -> None:
    uid, api_token = await create_user_with_token(container, "ada")
    code = (await container.services.users.issue_login_code(uid)).code
    async with live_server.client() as anonymous:
        first = await anonymous.post("/api/v1/session", json={"login_code": code})
        assert first.status_code == 201, first.text
        body = first.json()
        assert set(body) == {"token", "expires_at", "uid"} and body["uid"] == uid
        again = await anonymous.post("/api/v1/session", json={"login_code": code})
        assert again.status_code == 401
        assert again.json()["error"]["code"] == "unauthorized"
        unknown = await anonymous.post("/api/v1/session", json={"login_code": "yl_nope"})
        assert unknown.status_code == 401 and unknown.json() == again.json()
        assert (await anonymous.post("/api/v1/session", json={})).status_code == 422
        extra = {"login_code": code, "uid": uid}
        assert (await anonymous.post("/api/v1/session", json=extra)).status_code == 422
        # a token is read from the Authorization header only, never from the URL
        for query in ({"token": api_token}, {"access_token": body["token"]}):
            assert (await anonymous.get("/api/v1/me", params=query)).status_code == 401
    async with live_server.client(body["token"]) as session:
        me = await session.get("/api/v1/me")
        assert me.status_code == 200 and me.json()["uid"] == uid


def _wait_for_log(path: Path, needle: str) -> str:
    deadline = time.monotonic() + 30
    while True:
        text = path.read_text(errors="replace")
        if needle in text or time.monotonic() > deadline:
            return text
        time.sleep(0.1)


async def test_the_access_log_never_shows_a_credential(
    live_server: LiveServer, container: Container
) -> None:
    uid, _ = await create_user_with_token(container, "bo")
    real_code = (await container.services.users.issue_login_code(uid)).code
    real_session = await _session(live_server, container, uid)
    probes = [
        f"/?token=yx_{MARK}1abcdefghijklmnopqrstuvwxyz",
        f"/?login=yl_{MARK}2abcdefghijklmnopqrstuvwxyz",
        f"/?login={real_code}",
        f"/?token={real_session}",
        f"/api/v1/me?api_key={MARK}3&Password={MARK}4",
        f"/healthz?x=1&t=yx_{MARK}5abcdefghij",
    ]
    async with live_server.client() as anonymous:
        for probe in probes:
            assert (await anonymous.get(probe)).status_code in (200, 401)
        assert (await anonymous.get("/healthz?last=probe")).status_code == 200
    log = _wait_for_log(live_server.log_path, "GET /healthz?last=probe")
    assert "GET /healthz?last=probe" in log, log[-3000:]  # the access log is on and complete
    assert "GET /?token=REDACTED HTTP/1.1" in log
    assert "GET /?login=REDACTED HTTP/1.1" in log
    assert "GET /api/v1/me?api_key=REDACTED&Password=REDACTED HTTP/1.1" in log
    for secret in (MARK, real_code, real_code[3:], real_session, real_session[3:]):
        assert secret not in log


@pytest.fixture
def idle_server(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> LiveServer:
    """A live server without workers: a submitted run stays pending, its stream stays open."""
    monkeypatch.setenv("YUXI_TEST_SERVER_WORKERS", "0")
    server: LiveServer = request.getfixturevalue("live_server")
    return server


async def _follow(client: httpx.AsyncClient, run_id: str, opened: asyncio.Event) -> list[str]:
    """Read a run's event stream until the server ends it; ``opened`` is set at its first event."""
    lines: list[str] = []
    headers = {"Accept": "text/event-stream"}
    async with client.stream("GET", f"/api/v1/runs/{run_id}/events", headers=headers) as resp:
        assert resp.status_code == 200
        async for line in resp.aiter_lines():
            lines.append(line)
            if line.startswith("data:"):
                opened.set()
    return lines


async def test_an_open_event_stream_ends_when_its_token_is_revoked_or_expires(
    idle_server: LiveServer, container: Container
) -> None:
    users = container.services.users
    uid, api_token = await create_user_with_token(container, "cy")
    token_a = await _session(idle_server, container, uid)
    token_b = await _session(idle_server, container, uid)
    id_api, id_a, id_b = [t.id for t in await users.list_tokens(uid)]

    no_timeout = httpx.Timeout(30.0, read=None)
    async with (
        idle_server.client(api_token) as owner,
        httpx.AsyncClient(
            base_url=idle_server.base_url,
            headers={"Authorization": f"Bearer {token_a}"},
            timeout=no_timeout,
        ) as a,
        httpx.AsyncClient(
            base_url=idle_server.base_url,
            headers={"Authorization": f"Bearer {token_b}"},
            timeout=no_timeout,
        ) as b,
    ):
        thread = (await owner.post("/api/v1/threads", json={})).json()["thread_id"]
        started = await owner.post(f"/api/v1/threads/{thread}/runs", json={"input": "hello"})
        assert started.status_code == 202 and started.json()["status"] == "pending"
        run_id = started.json()["run_id"]

        opened_a, opened_b = asyncio.Event(), asyncio.Event()
        follow_a = asyncio.create_task(_follow(a, run_id, opened_a))
        follow_b = asyncio.create_task(_follow(b, run_id, opened_b))
        try:
            await asyncio.wait_for(asyncio.gather(opened_a.wait(), opened_b.wait()), 30)

            assert await users.revoke_tokens(uid, id_a) == [id_a]
            lines_a = await asyncio.wait_for(follow_a, STREAM_END_GRACE_SECONDS)
            assert any('"status":"pending"' in line for line in lines_a)
            assert not follow_b.done()  # only the revoked token's stream ended
            refused = await a.get(f"/api/v1/runs/{run_id}/events")
            assert refused.status_code == 401

            await _expire(container, token_b)
            await asyncio.wait_for(follow_b, STREAM_END_GRACE_SECONDS)
            assert (await b.get(f"/api/v1/runs/{run_id}")).status_code == 401
        finally:
            for task in (follow_a, follow_b):
                task.cancel()
            await asyncio.gather(follow_a, follow_b, return_exceptions=True)
        # the run itself never settled: the streams ended because of their tokens
        assert (await owner.get(f"/api/v1/runs/{run_id}")).json()["status"] == "pending"
        assert await users.revoke_tokens(uid) == [id_api, id_b]  # B had expired, not revoked
        assert (await owner.get("/api/v1/me")).status_code == 401


async def _expire(container: Container, token: str) -> None:
    async with container.session_factory() as s, s.begin():
        await s.execute(
            text(
                "UPDATE api_tokens SET expires_at = now() - interval '1 second' "
                "WHERE token_hash = :h"
            ),
            {"h": hashlib.sha256(token.encode()).hexdigest()},
        )


def _start_yuxi_run(settings: Settings, log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``yuxi run`` as ``make run`` starts it (on the test's database); its base URL."""
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("YUXI_")},
        "YUXI_DATABASE_URL": settings.database_url or "",
        "YUXI_DATA_DIR": str(settings.data_dir),
        "YUXI_HOST": "127.0.0.1",
        "YUXI_PORT": str(port),
        "YUXI_WORKERS": "0",
    }
    with log_path.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "yuxi.cli", "run"], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, log_path.read_text()[-3000:]
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, log_path.read_text()[-3000:]
        time.sleep(0.2)


async def test_yuxi_run_prints_a_single_use_login_link_and_mints_no_token(
    settings: Settings, container: Container, tmp_path: Path
) -> None:
    codes: list[str] = []
    logs: list[str] = []
    for start in range(2):
        log_path = tmp_path / f"run{start}.log"
        proc, base = await asyncio.to_thread(_start_yuxi_run, settings, log_path)
        try:
            banner = log_path.read_text()
            found = re.search(r"Open: (http://\S+)/\?login=(yl_[A-Za-z0-9_-]{43})\n", banner)
            assert found, banner
            assert found.group(1) == base
            code = found.group(2)
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                assert (await client.get(f"/?login={code}")).status_code == 200  # the page
                session = await client.post("/api/v1/session", json={"login_code": code})
                assert session.status_code == 201, session.text
                again = await client.post("/api/v1/session", json={"login_code": code})
                assert again.status_code == 401
                me = await client.get(
                    "/api/v1/me", headers={"Authorization": f"Bearer {session.json()['token']}"}
                )
                assert me.json()["uid"] == DEMO_UID
            codes.append(code)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        logs.append(log_path.read_text())
    assert codes[0] != codes[1]
    # two starts, two sign-ins: two expiring session tokens, nothing that never expires
    tokens = await container.services.users.list_tokens(DEMO_UID)
    assert [(t.label, t.expires_at is not None, t.active) for t in tokens] == [
        (SESSION_TOKEN_LABEL, True, True)
    ] * 2
    # the banner printed the code; after that it never reached the log again (the access log
    # line of the page request is redacted), and no token ever did
    for log, code in zip(logs, codes, strict=True):
        assert log.count(code) == 1
        assert "GET /?login=REDACTED HTTP/1.1" in log
        # the code is random URL-safe text and may itself contain the token prefix
        assert TOKEN_PREFIX not in log.replace(code, "")
