"""``PATCH /api/v1/threads/{id}`` (rename, hide from recall) and the recall exclusion rule, on a
real PostgreSQL: a thread its owner hid from recall is invisible to both history tools, inside
the SQL (so ``LIMIT`` counts only visible rows), until the owner shows it again."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.support.factories import make_thread, make_user, tool_payload
from tests.support.server import create_user_with_token
from yuxi.api.app import create_app
from yuxi.bootstrap import Container
from yuxi.errors import InvalidArgument, NotFound
from yuxi.limits import TITLE_MAX_CHARS

CJK_TITLE = "记忆线程标题"


def _marker(tag: str) -> str:
    return f"RECALL-{tag}-{uuid.uuid4().hex}"


@pytest.fixture
async def api(container: Container) -> AsyncIterator[tuple[httpx.AsyncClient, str, str]]:
    """An in-process client of the real app (no workers) for a new user: (client, uid, token)."""
    uid, token = await create_user_with_token(container, "owner")
    transport = httpx.ASGITransport(app=create_app(container, workers=0))
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(
        transport=transport, base_url="http://yuxi.test", headers=headers
    ) as client:
        yield client, uid, token


async def _thread_with(container: Container, uid: str, text: str) -> str:
    """A chat thread holding one user message ``text``."""
    chat = container.services.chat
    thread = (await chat.create_thread(uid, title="t")).thread_id
    await chat.submit(uid, thread, text)
    return thread


async def _search(container: Container, uid: str, query: str, limit: int = 10) -> dict[str, Any]:
    lookback = container.services.lookback
    return await tool_payload(
        lambda: lookback.search_thread_messages(uid=uid, query=query, limit=limit)
    )


async def _read(container: Container, uid: str, thread_id: str) -> dict[str, Any]:
    lookback = container.services.lookback
    return await tool_payload(
        lambda: lookback.read_thread_messages(uid=uid, thread_id=thread_id, include_tools=True)
    )


# -- the rule: a recall-excluded thread is invisible to both history tools ---------------------


async def test_an_excluded_thread_never_reaches_the_history_tools_until_shown_again(
    container: Container,
) -> None:
    chat = container.services.chat
    uid = await make_user(container)
    secret = _marker("hidden")
    thread = await _thread_with(container, uid, f"my note {secret}")
    assert [i["thread_id"] for i in (await _search(container, uid, secret))["items"]] == [thread]

    summary = await chat.update_thread(uid, thread, recall_excluded=True)
    assert summary.recall_excluded is True

    searched = await _search(container, uid, secret)
    assert searched["items"] == [] and secret not in json.dumps(searched)
    read = await _read(container, uid, thread)
    assert secret not in json.dumps(read)
    # The same answer as for another user's thread: nothing tells the two apart.
    stranger = await make_user(container)
    foreign = await _read(container, stranger, thread)
    assert read == foreign
    assert read["code"] == "not_found"

    # The owner still sees the thread and its messages in their own views.
    detail = await chat.get_thread(uid, thread)
    assert detail.recall_excluded is True
    assert any(secret in m.content for m in detail.messages)
    assert [t.recall_excluded for t in await chat.list_threads(uid)] == [True]

    await chat.update_thread(uid, thread, recall_excluded=False)
    assert [i["thread_id"] for i in (await _search(container, uid, secret))["items"]] == [thread]
    shown = await _read(container, uid, thread)
    assert shown["thread_id"] == thread and secret in json.dumps(shown)


async def test_the_limit_counts_only_visible_threads(container: Container) -> None:
    chat = container.services.chat
    uid = await make_user(container)
    shared = _marker("shared")
    visible = await _thread_with(container, uid, f"older visible {shared}")
    hidden_marker = _marker("hidden")
    excluded = await _thread_with(container, uid, f"newer hidden {shared} {hidden_marker}")
    await chat.update_thread(uid, excluded, recall_excluded=True)

    found = await _search(container, uid, shared, limit=1)
    assert [item["thread_id"] for item in found["items"]] == [visible]
    assert hidden_marker not in json.dumps(found)


# -- the service: validation and ownership ------------------------------------------------------


async def test_update_thread_validates_in_one_place(container: Container) -> None:
    chat = container.services.chat
    uid = await make_user(container)
    thread = (await chat.create_thread(uid, title="old")).thread_id
    ok = "题" * TITLE_MAX_CHARS
    assert (await chat.update_thread(uid, thread, title=f"  {ok}\n")).title == ok
    for bad in ("题" * (TITLE_MAX_CHARS + 1), "   ", "", "a\x00b", "\ud800", 7):
        with pytest.raises(InvalidArgument):
            await chat.update_thread(uid, thread, title=bad)
    for bad_flag in ("yes", 1, 0):
        with pytest.raises(InvalidArgument):
            await chat.update_thread(uid, thread, recall_excluded=bad_flag)
    with pytest.raises(InvalidArgument):
        await chat.update_thread(uid, thread)
    after = await chat.get_thread(uid, thread)
    assert (after.title, after.recall_excluded) == (ok, False)


async def test_only_the_owners_ordinary_threads_can_be_changed(container: Container) -> None:
    chat = container.services.chat
    owner, stranger = await make_user(container), await make_user(container)
    mine = (await chat.create_thread(owner, title="mine")).thread_id
    agent_call = await make_thread(container, owner, source="agent_call")
    deleted = await make_thread(container, owner, status="deleted")
    archived = await make_thread(container, owner, status="archived", title="old")
    for uid, thread in (
        (stranger, mine),
        (owner, agent_call),
        (owner, deleted),
        (owner, "no-such-thread"),
    ):
        with pytest.raises(NotFound):
            await chat.update_thread(uid, thread, title="taken", recall_excluded=True)
    assert (await chat.get_thread(owner, mine)).title == "mine"
    renamed = await chat.update_thread(owner, archived, title="kept")
    assert (renamed.title, renamed.status) == ("kept", "archived")


# -- the HTTP route ---------------------------------------------------------------------------


async def test_patch_renames_and_toggles_and_answers_the_summary(
    api: tuple[httpx.AsyncClient, str, str], container: Container
) -> None:
    client, _, _ = api
    thread = (await client.post("/api/v1/threads", json={"title": "first"})).json()["thread_id"]
    resp = await client.patch(
        f"/api/v1/threads/{thread}", json={"title": f" {CJK_TITLE} ", "recall_excluded": True}
    )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert (body["thread_id"], body["title"], body["recall_excluded"]) == (
        thread,
        CJK_TITLE,
        True,
    )
    assert "messages" not in body
    only_flag = await client.patch(f"/api/v1/threads/{thread}", json={"recall_excluded": False})
    assert only_flag.status_code == 200
    assert (only_flag.json()["title"], only_flag.json()["recall_excluded"]) == (CJK_TITLE, False)
    shown = (await client.get(f"/api/v1/threads/{thread}")).json()
    assert (shown["title"], shown["recall_excluded"]) == (CJK_TITLE, False)
    listed = (await client.get("/api/v1/threads")).json()["threads"]
    assert [(t["thread_id"], t["recall_excluded"]) for t in listed] == [(thread, False)]


async def test_patch_title_boundary_in_characters(api: tuple[httpx.AsyncClient, str, str]) -> None:
    client, _, _ = api
    thread = (await client.post("/api/v1/threads", json={})).json()["thread_id"]
    at_limit = "忆" * TITLE_MAX_CHARS
    ok = await client.patch(f"/api/v1/threads/{thread}", json={"title": at_limit})
    assert ok.status_code == 200 and ok.json()["title"] == at_limit
    over = await client.patch(f"/api/v1/threads/{thread}", json={"title": at_limit + "忆"})
    assert over.status_code == 400
    assert over.json()["error"]["code"] == "invalid_argument"
    assert (await client.get(f"/api/v1/threads/{thread}")).json()["title"] == at_limit


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"title": None},
        {"title": "   "},
        {"title": 5},
        {"recall_excluded": "true"},
        {"recall_excluded": 1},
        {"title": "x", "status": "deleted"},
        {"recall_excluded": True, "source": "chat"},
    ],
)
async def test_patch_refuses_bad_bodies_and_changes_nothing(
    api: tuple[httpx.AsyncClient, str, str], body: dict[str, Any]
) -> None:
    client, _, _ = api
    thread = (await client.post("/api/v1/threads", json={"title": "same"})).json()["thread_id"]
    resp = await client.patch(f"/api/v1/threads/{thread}", json=body)
    assert resp.status_code in (400, 422), resp.text
    assert resp.json()["error"]["code"] == "invalid_argument"
    after = (await client.get(f"/api/v1/threads/{thread}")).json()
    assert (after["title"], after["recall_excluded"], after["status"]) == ("same", False, "active")


async def test_patch_on_another_users_thread_is_404(
    api: tuple[httpx.AsyncClient, str, str], container: Container
) -> None:
    client, _, _ = api
    other = await make_user(container)
    theirs = (await container.services.chat.create_thread(other, title="theirs")).thread_id
    resp = await client.patch(f"/api/v1/threads/{theirs}", json={"recall_excluded": True})
    assert resp.status_code == 404
    assert resp.json()["error"]["code"] == "not_found"
    missing = await client.patch("/api/v1/threads/nope", json={"title": "x"})
    assert missing.status_code == 404
    detail = await container.services.chat.get_thread(other, theirs)
    assert (detail.title, detail.recall_excluded) == ("theirs", False)
