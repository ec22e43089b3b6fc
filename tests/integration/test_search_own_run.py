"""``search history: Q`` never finds its own question: the messages of the searching run (and
of the interrupted runs it resumes) are left out in SQL, while every earlier message with the
same text, in this thread or another, is still found."""

from __future__ import annotations

import json
import uuid
from typing import Any

from tests.support.factories import make_user, tool_payload
from yuxi.bootstrap import Container
from yuxi.runtime.worker import Worker


async def _search_results(container: Container, uid: str, run_id: str) -> list[dict[str, Any]]:
    """The items of every search_thread_messages result recorded for ``run_id``."""
    events = await container.services.chat.events_after(uid, run_id)
    found: list[dict[str, Any]] = []
    searched = False
    for event in events:
        data = event.data
        if event.event_type == "tool_end" and data.get("name") == "search_thread_messages":
            result = data["result"]
            payload = json.loads(result) if isinstance(result, str) else result
            assert data["status"] == "success", data
            found.extend(payload["items"])
            searched = True
    assert searched, events
    return found


async def _user_message_id(container: Container, uid: str, thread: str, run_id: str) -> int:
    messages = (await container.services.chat.get_thread(uid, thread)).messages
    (own,) = [m for m in messages if m.role == "user" and m.run_id == run_id]
    return own.message_id


async def test_a_search_leaves_out_its_own_question(container: Container, worker: Worker) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    marker = f"OWNQ-{uuid.uuid4().hex[:12]}"
    old = (await chat.create_thread(uid)).thread_id
    earlier, _ = await chat.submit(uid, old, f"I once said {marker} here")
    assert await worker.run_once()
    earlier_id = await _user_message_id(container, uid, old, earlier.id)

    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, f"search history: {marker}")
    assert await worker.run_once()
    assert (await chat.get_run(uid, run.id)).status == "completed"
    own_id = await _user_message_id(container, uid, thread, run.id)
    ids = [item["message_id"] for item in await _search_results(container, uid, run.id)]
    assert own_id not in ids
    assert earlier_id in ids

    # the next run of the same thread does find the earlier question (it is history now)
    again, _ = await chat.submit(uid, thread, f"search history: {marker}")
    assert await worker.run_once()
    again_ids = [item["message_id"] for item in await _search_results(container, uid, again.id)]
    assert own_id in again_ids
    assert await _user_message_id(container, uid, thread, again.id) not in again_ids


async def test_a_resumed_run_leaves_out_the_question_of_the_run_it_resumes(
    container: Container, worker: Worker
) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    marker = f"RESQ-{uuid.uuid4().hex[:12]}"
    thread = (await chat.create_thread(uid)).thread_id
    asked = f"write file notes/a.md: hi\nsearch history: {marker}"
    run, _ = await chat.submit(uid, thread, asked)
    assert await worker.run_once()
    assert (await chat.get_run(uid, run.id)).status == "interrupted"
    own_id = await _user_message_id(container, uid, thread, run.id)
    resumed, _ = await chat.resume(uid, run.id, "approve")
    assert await worker.run_once()
    assert (await chat.get_run(uid, resumed.id)).status == "completed"
    items = await _search_results(container, uid, resumed.id)
    assert own_id not in [item["message_id"] for item in items]


async def test_the_service_filters_only_the_named_run(container: Container) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    lookback = container.services.lookback
    marker = f"SVCQ-{uuid.uuid4().hex[:12]}"
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, f"look for {marker}")

    def search(current: str | None) -> Any:
        return lambda: lookback.search_thread_messages(
            uid=uid, query=marker, current_run_id=current
        )

    assert len((await tool_payload(search(None)))["items"]) == 1
    assert (await tool_payload(search(run.id)))["items"] == []
    assert len((await tool_payload(search("some-other-run")))["items"]) == 1
