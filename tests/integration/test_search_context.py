"""Hits with their neighbours, the owner's own search, and list_threads without the asking
thread (design.md §6.2, §6.5; issue 34).

* A hit carries the visible message just before and after it in its thread: the record's rules
  hold for them (never a tool message, a hidden type, another thread's or the searching run's
  own message), each at most ``SEARCH_CONTEXT_BYTES`` of the text nearest the hit.
* ``GET /api/v1/search`` is the owner's search: threads hidden from recall too, memory on or off,
  never another user's; its refusals are 400 ``invalid_argument``.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from tests.support.factories import make_run
from tests.support.history import new_thread, seed_user, text_size, tx
from yuxi.bootstrap import Container
from yuxi.db.models import Conversation
from yuxi.errors import MemoryDisabled, UnauthorizedRun
from yuxi.limits import SEARCH_CONTEXT_BYTES, SEARCH_QUERY_MAX_CHARS, SEARCH_RESPONSE_BYTES
from yuxi.repositories.thread_repository import ThreadRepository
from yuxi.services.lookback import json_bytes

pytestmark = pytest.mark.pg


async def search(container: Container, uid: str, query: str, **kw: Any) -> dict[str, Any]:
    result = await container.services.lookback.search_thread_messages(uid=uid, query=query, **kw)
    return dict(result.to_payload())


def mark() -> str:
    return f"HIDDEN{uuid.uuid4().hex[:10]}"


async def test_a_hit_carries_its_visible_neighbours_and_nothing_hidden(
    container: Container,
) -> None:
    alice = await seed_user(container)
    bob = await seed_user(container)
    tag = uuid.uuid4().hex[:8]
    conv, ids = await new_thread(
        container,
        alice,
        [
            f"{tag} what did we name the puppy",
            "We went with Biscuit, after the colour of her ears.",
            "and the vet appointment is on Friday",
        ],
    )
    hidden = [mark() for _ in range(3)]
    async with tx(container) as s:
        repo = ThreadRepository(s)
        # Hidden places right next to the hit: a tool message, a tool call, an audit record.
        await repo.add_message(conv, role="tool", content=hidden[0])
        await repo.add_message(conv, role="assistant", content=hidden[1], message_type="tool_call")
        await repo.add_message(conv, role="assistant", content=hidden[2], message_type="audit")
    await new_thread(container, alice, [mark() + " elsewhere"])
    await new_thread(container, bob, [f"{tag} bob's own puppy line", mark()])
    result = await search(container, alice, f"{tag} puppy")
    (hit,) = result["items"]
    assert hit["message_id"] == ids[0]
    assert "before" not in hit  # the first message of its thread
    assert hit["after"] == {
        "message_id": ids[1],
        "role": "assistant",
        "content": "We went with Biscuit, after the colour of her ears.",
    }
    # The last visible message's neighbour after it is none: the hidden rows are skipped.
    last = await search(container, alice, "vet appointment friday")
    (tail,) = last["items"]
    assert tail["message_id"] == ids[2]
    assert tail["before"]["content"].startswith("We went with Biscuit")
    assert "after" not in tail
    text = json.dumps([result, last], ensure_ascii=False)
    assert "HIDDEN" not in text


async def test_neighbours_are_cut_in_utf8_bytes_nearest_the_hit(container: Container) -> None:
    alice = await seed_user(container)
    tag = uuid.uuid4().hex[:8]
    # 85 Han characters (255 bytes) + one ASCII byte: exactly the budget; one more is over.
    fits = "始" + "茶" * 84 + "x"
    over = "始" + "茶" * 84 + "xy"
    assert text_size(fits) == SEARCH_CONTEXT_BYTES
    _, ids = await new_thread(container, alice, [fits, f"{tag} the hit", over])
    (hit,) = (await search(container, alice, tag))["items"]
    assert hit["message_id"] == ids[1]
    assert hit["before"] == {"message_id": ids[0], "role": "user", "content": fits}
    after = hit["after"]
    assert after["truncated"] is True
    assert text_size(after["content"]) <= SEARCH_CONTEXT_BYTES
    assert after["content"].startswith("始茶")  # the start: nearest the hit
    # The message before keeps its end (nearest the hit) when it is cut.
    await new_thread(container, alice, [over + "终", f"{tag}2 second hit"])
    (second,) = (await search(container, alice, f"{tag}2"))["items"]
    before = second["before"]
    assert before["truncated"] is True
    assert before["content"].endswith("xy终")
    assert text_size(before["content"]) <= SEARCH_CONTEXT_BYTES
    # Ten hits, each with two long neighbours, still fit the response budget.
    long_text = "长" * 2000
    contents: list[str] = []
    for i in range(10):
        contents += [long_text, f"{tag}3 hit {i}", long_text]
    await new_thread(container, alice, contents)
    many = await search(container, alice, f"{tag}3", limit=10)
    assert len(many["items"]) == 10
    assert json_bytes(many) <= SEARCH_RESPONSE_BYTES


async def test_the_searching_runs_own_message_is_never_a_neighbour(
    container: Container,
) -> None:
    alice = await seed_user(container)
    tag = uuid.uuid4().hex[:8]
    conv, ids = await new_thread(container, alice, [f"{tag} an earlier line"])
    run = await make_run(container, alice, conv.thread_id)
    own = mark()
    async with tx(container) as s:
        await ThreadRepository(s).add_message(conv, role="user", content=own, run_id=run.run_id)
    found = await search(container, alice, tag, current_run_id=run.run_id)
    (hit,) = found["items"]
    assert hit["message_id"] == ids[0]
    assert "after" not in hit
    assert own not in json.dumps(found)
    # Without the run (the owner's view, or another run), it is the neighbour.
    (again,) = (await search(container, alice, tag))["items"]
    assert again["after"]["content"] == own


async def test_the_owners_search_sees_hidden_from_recall_and_needs_no_memory(
    container: Container, client: httpx.AsyncClient
) -> None:
    users = container.services.users
    alice = await users.create_user("alice-" + uuid.uuid4().hex[:6])
    bob = await users.create_user("bob-" + uuid.uuid4().hex[:6])
    auth = {"Authorization": f"Bearer {alice.token}"}
    tag = uuid.uuid4().hex[:8]
    shown, shown_ids = await new_thread(container, alice.uid, [f"{tag} oolong in the morning"])
    kept, kept_ids = await new_thread(container, alice.uid, [f"{tag} oolong, kept from recall"])
    await new_thread(container, bob.uid, [f"{tag} bob's oolong"])
    await new_thread(container, alice.uid, [f"{tag} oolong archived"], status="archived")
    async with tx(container) as s:
        await s.execute(
            update(Conversation).where(Conversation.id == kept.id).values(recall_excluded=True)
        )
    # Memory is off: the model's search answers nothing, the owner's search works.
    with pytest.raises(MemoryDisabled):
        await search(container, alice.uid, tag)
    response = await client.get("/api/v1/search", params={"q": f"{tag} oolong"}, headers=auth)
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    assert sorted(i["message_id"] for i in items) == sorted([*shown_ids, *kept_ids])
    assert {i["thread_id"] for i in items} == {shown.thread_id, kept.thread_id}
    # The model's search, with memory on, never sees the thread kept from recall.
    await users.set_memory_enabled(alice.uid, True)
    model = await search(container, alice.uid, f"{tag} oolong")
    assert [i["message_id"] for i in model["items"]] == shown_ids
    # No token: 401; Bob sees only his own.
    assert (await client.get("/api/v1/search", params={"q": tag})).status_code == 401
    bobs = await client.get(
        "/api/v1/search", params={"q": tag}, headers={"Authorization": f"Bearer {bob.token}"}
    )
    assert [i["thread_id"] for i in bobs.json()["items"]] != []
    assert shown.thread_id not in bobs.text and kept.thread_id not in bobs.text


async def test_the_owners_search_refuses_bad_queries_at_the_boundary(
    container: Container, client: httpx.AsyncClient
) -> None:
    alice = await container.services.users.create_user("q-" + uuid.uuid4().hex[:6])
    auth = {"Authorization": f"Bearer {alice.token}"}
    await new_thread(container, alice.uid, ["我们喝茶茶吧"])
    at_limit = "茶" * SEARCH_QUERY_MAX_CHARS
    ok = await client.get("/api/v1/search", params={"q": at_limit}, headers=auth)
    assert ok.status_code == 200, ok.text
    assert len(ok.json()["items"]) == 1
    for bad in ("", "   ", at_limit + "茶", "%% --", '"--" tea'):
        refused = await client.get("/api/v1/search", params={"q": bad}, headers=auth)
        assert refused.status_code == 400, (bad, refused.text)
        assert refused.json()["error"]["code"] == "invalid_argument"
    for limit in ("0", "11", "x"):
        refused = await client.get(
            "/api/v1/search", params={"q": "tea", "limit": limit}, headers=auth
        )
        assert refused.status_code == 400, (limit, refused.text)
        assert refused.json()["error"]["code"] == "invalid_argument"


async def test_list_threads_leaves_out_the_asking_thread(container: Container) -> None:
    alice = await seed_user(container)
    old, _ = await new_thread(container, alice, ["an older thread"], title="older")
    current, _ = await new_thread(container, alice, ["the thread we are in"], title="current")
    lookback = container.services.lookback
    everything = (await lookback.list_threads(uid=alice)).to_payload()
    assert [i["thread_id"] for i in everything["items"]] == [current.thread_id, old.thread_id]
    asked = (
        await lookback.list_threads(uid=alice, current_thread_id=current.thread_id)
    ).to_payload()
    assert [i["thread_id"] for i in asked["items"]] == [old.thread_id]
    assert asked["has_more"] is False
    # One thread less counts for has_more too: limit 1 over two others.
    third, _ = await new_thread(container, alice, ["a third"], title="third")
    one = (
        await lookback.list_threads(uid=alice, limit=1, current_thread_id=third.thread_id)
    ).to_payload()
    assert [i["thread_id"] for i in one["items"]] == [current.thread_id]
    assert one["has_more"] is True


async def test_a_search_without_a_trusted_user_is_refused_before_its_arguments(
    container: Container,
) -> None:
    lookback = container.services.lookback
    for uid in ("", "nul\x00uid"):
        with pytest.raises(UnauthorizedRun):
            await lookback.search_thread_messages(uid=uid, query="", after="not a date")
        with pytest.raises(UnauthorizedRun):
            await lookback.search_own_messages(uid=uid, query="", limit="x")
