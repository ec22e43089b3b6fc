"""``POST /api/v1/threads``: the body may be left out (a bare POST is ``{}``), and the first
message gives the thread a short automatic title."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.support.server import create_user_with_token
from yuxi.api.app import create_app
from yuxi.bootstrap import Container
from yuxi.limits import AUTO_TITLE_MAX_CHARS


@pytest.fixture
async def client(container: Container) -> AsyncIterator[httpx.AsyncClient]:
    _, token = await create_user_with_token(container, "creator")
    transport = httpx.ASGITransport(app=create_app(container, workers=0))
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://yuxi.test",
        headers={"Authorization": f"Bearer {token}"},
    ) as c:
        yield c


async def test_a_bare_post_creates_a_thread(client: httpx.AsyncClient) -> None:
    bare = await client.post("/api/v1/threads")
    assert bare.status_code == 201, bare.text
    empty = await client.post("/api/v1/threads", json={})
    assert empty.status_code == 201, empty.text
    titled = await client.post("/api/v1/threads", json={"title": "标题"})
    assert titled.status_code == 201 and titled.json()["title"] == "标题"
    assert bare.json()["title"] == empty.json()["title"] == ""
    listed = (await client.get("/api/v1/threads")).json()["threads"]
    assert len(listed) == 3


@pytest.mark.parametrize("raw", [b'{"nope": 1}', b"null", b"[]", b'"s"', b"{"])
async def test_a_bad_body_is_still_refused(client: httpx.AsyncClient, raw: bytes) -> None:
    resp = await client.post(
        "/api/v1/threads", content=raw, headers={"Content-Type": "application/json"}
    )
    assert resp.status_code in (400, 422), resp.text
    assert resp.json()["error"]["code"] == "invalid_argument"
    assert (await client.get("/api/v1/threads")).json()["threads"] == []


async def test_the_first_message_gives_a_short_title(client: httpx.AsyncClient) -> None:
    thread = (await client.post("/api/v1/threads")).json()["thread_id"]
    sent = await client.post(f"/api/v1/threads/{thread}/runs", json={"input": "忆" * 5000})
    assert sent.status_code in (200, 201, 202), sent.text
    title = (await client.get(f"/api/v1/threads/{thread}")).json()["title"]
    assert title == "忆" * (AUTO_TITLE_MAX_CHARS - 1) + "…"
