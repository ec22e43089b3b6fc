"""The rules of a new message (``ChatService.submit``), each with what it must not write.

The insert of the run checks the request id, the approval state and the one active run itself
(no read before it, no savepoint around it), and writes the message and the ``pending`` event
in the same statement (``AgentRunRepository.submit_message``). These tests pin
the answers and their order, and that a refused or repeated request writes nothing — no second
message, no event, no worker woken.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import psycopg
import pytest
from sqlalchemy import text

from tests.support.factories import make_user, sql
from tests.support.waiting import until_waiting_on_a_lock
from yuxi.bootstrap import Container, open_notifications
from yuxi.db.notifications import RUN_CANCEL, RUN_PENDING, Notifications
from yuxi.errors import ActiveRunExists, Conflict, NotFound
from yuxi.limits import THREAD_ID_MAX_CHARS
from yuxi.repositories.runs.agent_run_repository import AgentRunRepository

pytestmark = pytest.mark.pg

SETTLE_SECONDS = 30.0


async def _written(container: Container, uid: str, thread: str) -> tuple[int, int]:
    """The thread's messages and its runs' events, counted."""
    chat = container.services.chat
    messages = (await chat.get_thread(uid, thread)).messages
    events = 0
    for run in await chat.thread_runs(uid, thread):
        events += len(await chat.events_after(uid, run.id))
    return len(messages), events


async def _all_delivered(container: Container, hub: Notifications) -> None:
    """Once a marker notified now has arrived, anything committed before it has too."""
    marker = f"marker-{uuid.uuid4().hex}"
    with hub.subscribe(RUN_CANCEL, marker) as seen:
        async with await psycopg.AsyncConnection.connect(container.database_url) as conn:
            await conn.execute("SELECT pg_notify(%s, %s)", (RUN_CANCEL, marker))
            await conn.commit()
        assert await seen.wait(SETTLE_SECONDS), "the marker notification never arrived"


async def test_a_retried_request_gets_its_run_and_writes_nothing_again(
    container: Container,
) -> None:
    chat = container.services.chat
    uid = await make_user(container)
    thread = (await chat.create_thread(uid)).thread_id
    async with open_notifications(container) as hub:
        pending = hub.subscribe(RUN_PENDING)
        run, created = await chat.submit(uid, thread, "hello qzxretry", request_id="r-1")
        assert created and await pending.wait(SETTLE_SECONDS)
        pending.clear()
        again, created_again = await chat.submit(uid, thread, "hello qzxretry", request_id="r-1")
        await _all_delivered(container, hub)
        assert not await pending.wait(0)  # no row written: no worker woken
    assert again.id == run.id and not created_again
    assert await _written(container, uid, thread) == (1, 1)  # one message, one pending event


async def test_a_request_id_used_on_another_thread_conflicts(container: Container) -> None:
    chat = container.services.chat
    uid = await make_user(container)
    first = (await chat.create_thread(uid)).thread_id
    other = (await chat.create_thread(uid)).thread_id
    await chat.submit(uid, first, "one", request_id="r-2")
    with pytest.raises(Conflict, match="another thread"):
        await chat.submit(uid, other, "two", request_id="r-2")
    assert await _written(container, uid, other) == (0, 0)


async def test_a_thread_waiting_for_a_decision_refuses_a_new_message_not_a_retry(
    container: Container,
) -> None:
    """The request's own run comes back even once it waits for approval (the retry is
    answered before the approval state is): the order of the rules before the insert
    absorbed them."""
    chat = container.services.chat
    uid = await make_user(container)
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "write something", request_id="r-3")
    await sql(container, "UPDATE agent_runs SET status = 'interrupted' WHERE id = :id", id=run.id)
    with pytest.raises(Conflict, match="approval decision"):
        await chat.submit(uid, thread, "hello?", request_id="r-4")
    again, created = await chat.submit(uid, thread, "write something", request_id="r-3")
    assert again.id == run.id and not created
    assert await _written(container, uid, thread) == (1, 1)
    assert [r.id for r in await chat.thread_runs(uid, thread)] == [run.id]


async def test_a_second_active_run_is_refused_and_writes_nothing(container: Container) -> None:
    chat = container.services.chat
    uid = await make_user(container)
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "first")
    with pytest.raises(ActiveRunExists):
        await chat.submit(uid, thread, "second")
    assert await _written(container, uid, thread) == (1, 1)
    await sql(container, "UPDATE agent_runs SET status = 'completed' WHERE id = :id", id=run.id)
    _, created = await chat.submit(uid, thread, "third")
    assert created and await _written(container, uid, thread) == (2, 2)


async def test_an_archived_thread_refuses_even_a_retry(container: Container) -> None:
    chat = container.services.chat
    uid = await make_user(container)
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "hello", request_id="r-5")
    await sql(container, "UPDATE agent_runs SET status = 'completed' WHERE id = :id", id=run.id)
    await chat.archive_thread(uid, thread)
    with pytest.raises(Conflict, match="archived"):
        await chat.submit(uid, thread, "hello", request_id="r-5")
    with pytest.raises(Conflict, match="archived"):
        await chat.submit(uid, thread, "hello again", request_id="r-6")


async def test_the_first_message_titles_the_thread_and_a_later_one_does_not(
    container: Container,
) -> None:
    chat = container.services.chat
    uid = await make_user(container)
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "\n  Plan the trip  \nsecond line")
    assert (await chat.get_thread(uid, thread)).title == "Plan the trip"
    await sql(container, "UPDATE agent_runs SET status = 'completed' WHERE id = :id", id=run.id)
    await chat.submit(uid, thread, "something else")
    assert (await chat.get_thread(uid, thread)).title == "Plan the trip"


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        ("DELETE FROM conversations WHERE thread_id = :t", NotFound),
        (
            "UPDATE conversations SET status = 'deleted', deleted_at = now() WHERE thread_id = :t",
            NotFound,
        ),
        ("UPDATE conversations SET status = 'archived' WHERE thread_id = :t", Conflict),
        ("UPDATE conversations SET uid = :other WHERE thread_id = :t", NotFound),
    ],
    ids=["purged", "trashed", "archived", "handed-over"],
)
async def test_a_thread_changed_while_the_submission_waits_for_it_gets_nothing(
    container: Container, change: str, refusal: type[Exception]
) -> None:
    """The submission is one statement, with no read before it: it holds the thread's row while
    it writes, so a change of the thread in flight (purged, moved to the trash, archived, given
    to another user) makes it wait, and once the change commits the statement sees it on the
    row it finally locks — the answer is the rule's (a 404 or a Conflict, not a database
    error) and nothing of the request is written: no run, no message, no event."""
    chat = container.services.chat
    uid = await make_user(container)
    other = await make_user(container, name="qzxother")
    thread = (await chat.create_thread(uid)).thread_id
    async with container.session_factory() as changing:
        await changing.execute(text(change), {"t": thread, "other": other})
        waiting = asyncio.create_task(chat.submit(uid, thread, "qzxinflight", request_id="qzx-r"))
        await until_waiting_on_a_lock(container.database_url)
        assert not waiting.done()
        await changing.commit()
    with pytest.raises(refusal):
        await waiting
    async with container.uow() as uow:
        assert await uow.runs.get_by_request(uid, "qzx-r") is None
    async with container.session_factory() as s:
        left = await s.execute(
            text(
                "SELECT (SELECT count(*) FROM messages WHERE content = 'qzxinflight'),"
                " (SELECT count(*) FROM run_events e JOIN agent_runs r ON r.id = e.run_id"
                "  WHERE r.request_id = 'qzx-r')"
            )
        )
    assert tuple(left.one()) == (0, 0)


async def test_an_agent_call_that_loses_the_race_for_its_request_id_gets_that_run(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two agent calls with one request id, racing: each finds no run for it and makes a
    thread; the one whose insert comes second writes nothing (the request has its run) and
    answers with that run, its own new thread rolled back — a retry, not a conflict."""
    chat = container.services.chat
    uid = await make_user(container)
    run, created = await chat.submit_agent_call(uid, "one shot qzxrace", request_id="qzx-race")
    assert created
    real = AgentRunRepository.get_by_request
    asked: list[str] = []

    async def first_misses(self: AgentRunRepository, uid: str, request_id: str) -> Any:
        asked.append(request_id)
        return None if len(asked) == 1 else await real(self, uid, request_id)

    monkeypatch.setattr(AgentRunRepository, "get_by_request", first_misses)
    again, created_again = await chat.submit_agent_call(
        uid, "one shot qzxrace", request_id="qzx-race"
    )
    assert (again.id, created_again) == (run.id, False)
    assert asked == ["qzx-race", "qzx-race"]
    async with container.uow() as uow:
        calls = await uow.threads.list_conversations(uid, sources=("agent_call",))
    assert [t.thread_id for t in calls] == [run.conversation_thread_id]


async def test_a_thread_id_at_its_limit_is_a_thread_and_one_over_is_not_found(
    container: Container,
) -> None:
    """A thread id is at most ``THREAD_ID_MAX_CHARS`` characters (the column's): a thread whose
    id is that long takes a message; an id one longer names no thread — a 404, and nothing is
    written. (The submission's insert writes the thread's own id, from its row: a caller's
    string too long for the column would be refused even with no row to insert — a 500, which
    the hostile-input tier caught.)"""
    chat = container.services.chat
    uid = await make_user(container)
    longest = "t" * THREAD_ID_MAX_CHARS
    await sql(
        container,
        "INSERT INTO conversations (thread_id, uid, title, status, source, metadata)"
        " VALUES (:t, :u, '', 'active', 'chat', '{}')",
        t=longest,
        u=uid,
    )
    run, created = await chat.submit(uid, longest, "at the limit 边界 qzxlimit")
    assert created and run.conversation_thread_id == longest
    with pytest.raises(NotFound):
        await chat.submit(uid, longest + "t", "one over qzxover", request_id="qzx-over")
    async with container.uow() as uow:
        assert await uow.runs.get_by_request(uid, "qzx-over") is None
