"""A decision cannot be hijacked (issue 27 §6): the request ids the server derives
(``resume:<interrupted run>``, ``subagent:…``) are refused from clients, a decision only ever
answers a resume run of that interruption, and the interruption can still be decided after an
attempt; idempotent retries of a real decision still get the run they created."""

from __future__ import annotations

import httpx
import pytest

from tests.support.factories import interrupted_run, make_user, sql
from yuxi.bootstrap import Container
from yuxi.errors import Conflict, InvalidArgument
from yuxi.runtime.worker import Worker
from yuxi.vocabulary import SERVER_REQUEST_ID_PREFIXES


async def test_a_chat_run_cannot_take_a_decisions_id_and_the_decision_still_lands(
    container: Container, worker: Worker
) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    _, interrupted = await interrupted_run(container, worker, uid)
    other = (await chat.create_thread(uid)).thread_id
    with pytest.raises(InvalidArgument, match="resume:"):
        await chat.submit(uid, other, "hijack", request_id=f"resume:{interrupted}")
    with pytest.raises(InvalidArgument, match="subagent:"):
        await chat.submit_agent_call(uid, "hijack", request_id=f"subagent:{interrupted}:x")
    assert [r.id for r in await chat.thread_runs(uid, other)] == []  # nothing was stored

    decided, created = await chat.resume(uid, interrupted, "approve")
    assert created
    assert (decided.run_type, decided.created_by_run_id) == ("resume", interrupted)
    # An idempotent retry gets the run the first one created; the other decision is refused
    # (tests/integration/test_second_decision.py).
    again, created_again = await chat.resume(uid, interrupted, "approve")
    assert (again.id, created_again) == (decided.id, False)


@pytest.mark.parametrize("prefix", SERVER_REQUEST_ID_PREFIXES)
async def test_every_server_prefix_is_refused_and_lookalikes_are_not(
    container: Container, prefix: str
) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    with pytest.raises(InvalidArgument):
        await chat.submit(uid, thread, "x", request_id=prefix + "anything")
    # Only the exact prefix is the server's: these ids can never equal a derived one.
    run, created = await chat.submit(uid, thread, "x", request_id=prefix.upper() + "anything")
    assert created and run.request_id == prefix.upper() + "anything"


async def test_a_run_stored_before_the_fix_never_answers_a_decision(
    container: Container, worker: Worker
) -> None:
    """A chat run planted with the decision's id before the prefix was reserved (simulated here
    with SQL): the decision fails closed instead of answering it (migration 0010 moves such
    rows out of the way; tests/integration/test_migration_0010.py)."""
    uid = await make_user(container)
    chat = container.services.chat
    _, interrupted = await interrupted_run(container, worker, uid)
    other = (await chat.create_thread(uid)).thread_id
    planted, _ = await chat.submit(uid, other, "planted", request_id="plant-me")
    await sql(
        container,
        "UPDATE agent_runs SET request_id = :rid, status = 'completed' WHERE id = :id",
        rid=f"resume:{interrupted}",
        id=planted.id,
    )
    with pytest.raises(Conflict, match="not its decision"):
        await chat.resume(uid, interrupted, "approve")


# -- over HTTP --------------------------------------------------------------------------------


async def test_the_attack_over_http_is_a_clear_400_and_approve_still_works(
    container: Container, worker: Worker, client: httpx.AsyncClient
) -> None:
    created = await container.services.users.create_user("decider")
    auth = {"Authorization": f"Bearer {created.token}"}
    _, interrupted = await interrupted_run(container, worker, created.uid)
    other = (await client.post("/api/v1/threads", headers=auth)).json()["thread_id"]

    attack = await client.post(
        f"/api/v1/threads/{other}/runs",
        headers=auth,
        json={"input": "hijack", "request_id": f"resume:{interrupted}"},
    )
    assert attack.status_code == 400, attack.text
    assert attack.json()["error"]["code"] == "invalid_argument"
    assert "resume:" in attack.json()["error"]["message"]

    first = await client.post(
        f"/api/v1/runs/{interrupted}/resume", headers=auth, json={"decision": "approve"}
    )
    assert first.status_code == 202, first.text
    retry = await client.post(
        f"/api/v1/runs/{interrupted}/resume", headers=auth, json={"decision": "approve"}
    )
    assert retry.status_code in (200, 202), retry.text
    assert retry.json()["run_id"] == first.json()["run_id"]
    assert (first.json()["run_type"], first.json()["created_by_run_id"]) == ("resume", interrupted)
    assert await worker.run_once()
    settled = await container.services.chat.get_run(created.uid, first.json()["run_id"])
    assert settled.status == "completed"
