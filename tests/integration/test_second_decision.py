"""A second decision on an interruption tells the truth (issue 36 §2): the same decision gets the
run the first one started; the other decision is refused with 409 ``already_decided`` naming
what was decided, by which run and how that run stands, and nothing new is stored. Two decisions
racing on real PostgreSQL leave exactly one resume run. The thread view carries the decisions,
so a reloaded transcript still shows them (§4)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.support.factories import interrupted_run, make_user, sql
from yuxi.bootstrap import Container
from yuxi.errors import AlreadyDecided, YuxiError
from yuxi.runtime.worker import Worker


async def _resume_runs(container: Container, uid: str, thread: str) -> list[str]:
    runs = await container.services.chat.thread_runs(uid, thread)
    return [r.id for r in runs if r.run_type == "resume"]


@pytest.mark.parametrize(("first", "second"), [("approve", "reject"), ("reject", "approve")])
async def test_the_other_decision_is_refused_with_what_was_decided(
    container: Container, worker: Worker, first: str, second: str
) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    thread, interrupted = await interrupted_run(container, worker, uid)
    decided, created = await chat.resume(uid, interrupted, first)
    assert created

    with pytest.raises(AlreadyDecided) as refused:
        await chat.resume(uid, interrupted, second)
    assert refused.value.details == {
        "decision": first,
        "decided_by_run_id": decided.id,
        "interrupted_run_id": interrupted,
        "status": "pending",
    }
    past = {"approve": "approved", "reject": "rejected"}[first]
    assert f"already {past}" in refused.value.message
    assert await _resume_runs(container, uid, thread) == [decided.id]  # nothing new stored

    # Settled, the answer says so too (the UI tells "the file was written" from it).
    assert await worker.run_once()
    with pytest.raises(AlreadyDecided) as again:
        await chat.resume(uid, interrupted, second)
    assert again.value.details["status"] == "completed"
    # The same decision still gets its run (an idempotent retry, or a tab that agreed).
    same, created_same = await chat.resume(uid, interrupted, first)
    assert (same.id, created_same) == (decided.id, False)


async def test_two_decisions_at_once_leave_one_resume_run(
    container: Container, worker: Worker
) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    thread, interrupted = await interrupted_run(container, worker, uid)
    outcomes = await asyncio.gather(
        chat.resume(uid, interrupted, "approve"),
        chat.resume(uid, interrupted, "reject"),
        return_exceptions=True,
    )
    won = [o for o in outcomes if not isinstance(o, BaseException)]
    lost = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(won) == 1 and len(lost) == 1, outcomes
    run, created = won[0]
    assert created
    assert isinstance(lost[0], AlreadyDecided)
    assert lost[0].details["decided_by_run_id"] == run.id
    assert lost[0].details["decision"] == run.input_payload["decision"]
    assert await _resume_runs(container, uid, thread) == [run.id]


async def test_the_thread_view_carries_each_decision(container: Container, worker: Worker) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    thread, interrupted = await interrupted_run(container, worker, uid)
    before = await chat.get_thread(uid, thread)
    assert before.decisions == []
    decided, _ = await chat.resume(uid, interrupted, "reject")
    assert await worker.run_once()
    detail = await chat.get_thread(uid, thread)
    assert [(d.run_id, d.decision, d.decided_by_run_id, d.status) for d in detail.decisions] == [
        (interrupted, "reject", decided.id, "completed")
    ]
    # Another user asking for the thread learns nothing of it.
    stranger = await make_user(container, name="stranger")
    with pytest.raises(YuxiError):
        await chat.get_thread(stranger, thread)


async def test_a_run_holding_a_decision_id_is_not_shown_as_a_decision(
    container: Container, worker: Worker
) -> None:
    """Only a resume run of that interruption is its decision (the rule of ``decision_of``):
    a planted run holding the id (simulated with SQL) never shows up in the thread view."""
    uid = await make_user(container)
    chat = container.services.chat
    thread, interrupted = await interrupted_run(container, worker, uid)
    other = (await chat.create_thread(uid)).thread_id
    planted, _ = await chat.submit(uid, other, "planted", request_id="plant-me")
    await sql(
        container,
        "UPDATE agent_runs SET request_id = :rid, status = 'completed',"
        " conversation_thread_id = :thread WHERE id = :id",
        rid=f"resume:{interrupted}",
        thread=thread,
        id=planted.id,
    )
    assert (await chat.get_thread(uid, thread)).decisions == []


# -- over HTTP --------------------------------------------------------------------------------


async def test_over_http_the_second_tab_gets_409_already_decided(
    container: Container, worker: Worker, client: httpx.AsyncClient
) -> None:
    created = await container.services.users.create_user("two-tabs")
    auth = {"Authorization": f"Bearer {created.token}"}
    thread, interrupted = await interrupted_run(container, worker, created.uid)
    tab_b = await client.post(
        f"/api/v1/runs/{interrupted}/resume", headers=auth, json={"decision": "approve"}
    )
    assert tab_b.status_code == 202, tab_b.text
    assert tab_b.json()["decision"] == "approve"  # a resume run's view says what it decided
    interrupted_view = await client.get(f"/api/v1/runs/{interrupted}", headers=auth)
    assert interrupted_view.json()["decision"] is None  # a chat run decides nothing
    assert await worker.run_once()

    tab_a = await client.post(
        f"/api/v1/runs/{interrupted}/resume", headers=auth, json={"decision": "reject"}
    )
    assert tab_a.status_code == 409, tab_a.text
    error = tab_a.json()["error"]
    assert error["code"] == "already_decided"
    assert (error["decision"], error["decided_by_run_id"], error["status"]) == (
        "approve",
        tab_b.json()["run_id"],
        "completed",
    )
    assert "your reject was not applied" in error["message"]

    view = (await client.get(f"/api/v1/threads/{thread}", headers=auth)).json()
    assert [(d["run_id"], d["decision"]) for d in view["decisions"]] == [(interrupted, "approve")]
