"""RunService on real PostgreSQL: the typed claim, the one-transaction heartbeat, the lease
fence on every record, reconciliation codes and the SubAgent records."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import text

from tests.support.factories import make_run, make_user, sql
from tests.support.statements import counting
from yuxi.bootstrap import Container
from yuxi.identity import RunIdentity
from yuxi.services.runs.service import (
    ClaimedRun,
    LeaseLost,
    PreviousRun,
    ProposedToolCall,
    ReconciledRun,
    RunRecord,
    ToolOutcome,
)


async def _rows(c: Container, statement: str, **params: object) -> list[Any]:
    async with c.session_factory() as s:
        return list((await s.execute(text(statement), params)).all())


async def _claimed(c: Container) -> ClaimedRun:
    uid = await make_user(c)
    pending = await make_run(c, uid, claim=False)
    claimed = await c.services.runs.claim(pending.run_id)
    assert claimed is not None
    return claimed


async def _expire(c: Container, run_id: str) -> None:
    await sql(
        c,
        "UPDATE agent_runs SET lease_expires_at = now() - interval '1 second' WHERE id = :id",
        id=run_id,
    )


async def test_a_claim_is_typed_and_carries_one_identity(container: Container) -> None:
    uid = await make_user(container)
    pending = await make_run(container, uid, claim=False)
    claimed = await container.services.runs.claim_next()
    assert claimed is not None
    assert (claimed.run_type, claimed.attempt, claimed.created_by_run_id) == ("chat", 1, None)
    assert claimed.identity.run_id == pending.run_id
    assert claimed.identity.uid == uid and claimed.identity.thread_id == pending.thread_id
    assert claimed.identity.request_id == pending.request_id
    assert claimed.identity.holds_lease
    assert await container.services.runs.claim_next() is None
    assert await container.services.runs.claim(pending.run_id) is None  # not pending any more


async def test_heartbeat_renews_and_reads_the_cancel_request(container: Container) -> None:
    runs = container.services.runs
    claimed = await _claimed(container)
    beat = await runs.heartbeat(claimed.identity)
    assert (beat.alive, beat.cancel_requested) == (True, False)
    await sql(container, "UPDATE agent_runs SET cancel_requested = true")
    beat = await runs.heartbeat(claimed.identity)
    assert (beat.alive, beat.cancel_requested) == (True, True)
    await _expire(container, claimed.identity.run_id)
    beat = await runs.heartbeat(claimed.identity)
    assert (beat.alive, beat.cancel_requested) == (False, False)


async def test_every_record_is_fenced_by_the_lease(container: Container) -> None:
    runs = container.services.runs
    claimed = await _claimed(container)
    me = claimed.identity
    await runs.record_tool_calls(me, "", [ProposedToolCall("c1", "read_workspace_file", {})])
    await runs.record_tool_result(me, ToolOutcome("c1", "read_workspace_file", "boom", "error"))
    await runs.record_reply(me, "hi")
    await runs.record_memory_snapshot(me, "ab" * 32, 3)
    calls = await _rows(container, "SELECT status, output, error FROM tool_calls")
    assert [tuple(r) for r in calls] == [("error", "boom", "boom")]
    await _expire(container, me.run_id)
    before = await _rows(container, "SELECT count(*) FROM run_events")
    messages = await _rows(container, "SELECT count(*) FROM messages")
    writes = [
        runs.record_event(me, "token", {"text": "late"}),
        runs.record_tool_calls(me, "", [ProposedToolCall("c2", "x", {})]),
        runs.record_tool_result(me, ToolOutcome("c2", "x", "late", "success")),
        runs.record_reply(me, "late"),
        runs.record_memory_snapshot(me, "cd" * 32, 4),
        runs.finish(me, "completed"),
        runs.start_subagent(me, "late task"),
        runs.start(me, attempt=1, snapshot=("ef" * 32, 5)),
    ]
    for write in writes:
        with pytest.raises(LeaseLost):
            await write
    assert await _rows(container, "SELECT count(*) FROM run_events") == before
    assert await _rows(container, "SELECT count(*) FROM messages") == messages


async def test_one_step_is_one_transaction_all_or_nothing(container: Container) -> None:
    """What one graph step produced is written together (``RunService.recording``): a step that
    fails half-way leaves none of its records, and the final step settles the run with them."""
    runs = container.services.runs
    claimed = await _claimed(container)
    me = claimed.identity
    await runs.start(me, attempt=1, snapshot=("ab" * 32, 3))
    events = await _rows(container, "SELECT event_type FROM run_events ORDER BY seq")
    assert [e for (e,) in events][-2:] == ["run_status", "memory_snapshot"]
    before = await _rows(container, "SELECT count(*) FROM run_events")
    with pytest.raises(RuntimeError, match="qzxhalfway"):
        async with runs.recording(me) as record:
            record.tool_calls("", [ProposedToolCall("c1", "read_workspace_file", {})])
            raise RuntimeError("qzxhalfway")
    assert await _rows(container, "SELECT count(*) FROM run_events") == before
    assert await _rows(container, "SELECT count(*) FROM tool_calls") == [(0,)]
    async with runs.recording(me) as record:
        record.event("token", {"text": "Hel"})
        record.reply("Hello")
        record.finish("completed", output={"reply": "Hello"})
    events = await _rows(container, "SELECT event_type, data FROM run_events ORDER BY seq")
    assert [e for e, _ in events][-3:] == ["token", "message", "run_status"]
    assert events[-1][1] == {"status": "completed"}
    run = await _rows(container, "SELECT status FROM agent_runs WHERE id = :id", id=me.run_id)
    assert run == [("completed",)]
    with pytest.raises(LeaseLost):  # settled: the lease is no longer live
        async with runs.recording(me) as record:
            record.event("token", {"text": "late"})


async def test_a_subagent_identity_holds_no_lease(container: Container) -> None:
    runs = container.services.runs
    claimed = await _claimed(container)
    child = await runs.start_subagent(claimed.identity, "summarize")
    assert child.worker_id is None and not child.holds_lease
    for write in (
        runs.record_event(child, "token", {"text": "x"}),
        runs.record_reply(child, "x"),
        runs.finish(child, "completed"),
        runs.heartbeat(child),
    ):
        with pytest.raises(LeaseLost):
            await write


async def test_subagent_records(container: Container) -> None:
    runs = container.services.runs
    claimed = await _claimed(container)
    child = await runs.start_subagent(claimed.identity, "summarize the notes")
    assert child.uid == claimed.identity.uid and child.thread_id != claimed.identity.thread_id
    row = await _rows(
        container,
        "SELECT run_type, status, worker_id, created_by_run_id FROM agent_runs WHERE id = :id",
        id=child.run_id,
    )
    assert [tuple(r) for r in row] == [("subagent", "running", None, claimed.identity.run_id)]
    assert await runs.finish_subagent(child, "completed", "the summary")
    assert not await runs.finish_subagent(child, "failed", "too late")  # settled once
    row = await _rows(
        container, "SELECT status, output FROM agent_runs WHERE id = :id", id=child.run_id
    )
    assert [tuple(r) for r in row] == [("completed", {"reply": "the summary"})]
    texts = await _rows(
        container,
        "SELECT m.role, m.content FROM messages m JOIN conversations c "
        "ON c.id = m.conversation_id WHERE c.thread_id = :t ORDER BY m.id",
        t=child.thread_id,
    )
    assert [tuple(r) for r in texts] == [
        ("user", "summarize the notes"),
        ("assistant", "the summary"),
    ]


async def test_reconcile_records_the_code_each_run_got(container: Container) -> None:
    runs = container.services.runs
    claimed = await _claimed(container)
    child = await runs.start_subagent(claimed.identity, "task")
    assert await runs.reconcile() == []
    await _expire(container, claimed.identity.run_id)
    reconciled = await runs.reconcile()
    assert reconciled == [
        ReconciledRun(claimed.identity.run_id, "worker_lease_expired"),
        ReconciledRun(child.run_id, "parent_run_ended"),
    ]
    for run in reconciled:
        rows = await _rows(
            container,
            "SELECT r.error_code, e.data FROM agent_runs r JOIN run_events e ON e.run_id = r.id "
            "WHERE r.id = :id AND e.event_type = 'run_status'",
            id=run.run_id,
        )
        assert [(code, data["error"]["code"]) for code, data in rows] == [
            (run.error_code, run.error_code)
        ]
    assert await runs.reconcile() == []


async def test_resume_reads_the_interrupted_action_requests(container: Container) -> None:
    runs = container.services.runs
    claimed = await _claimed(container)
    requests = [{"name": "write_workspace_file", "args": {"path": "a.md"}}]
    await runs.finish(
        claimed.identity, "interrupted", output={"interrupt": {"action_requests": requests}}
    )
    resume = ClaimedRun(
        identity=RunIdentity(claimed.identity.uid, claimed.identity.thread_id, "r2", "q2", "w_x"),
        run_type="resume",
        input_payload={"decision": "approve"},
        attempt=1,
        created_by_run_id=claimed.identity.run_id,
    )
    assert await runs.interrupted_action_requests(resume) == requests
    other_user = RunIdentity("someone-else", claimed.identity.thread_id, "r3", "q3", "w_y")
    assert (
        await runs.interrupted_action_requests(
            ClaimedRun(other_user, "resume", {}, 1, claimed.identity.run_id)
        )
        == []
    )


@pytest.mark.parametrize("how", ["deleted", "another user's"])
async def test_a_step_whose_thread_is_gone_writes_nothing(container: Container, how: str) -> None:
    """A message names the run's thread by its id and owner in the statement that appends it:
    a thread that is gone (or no longer the run's user's) ends the step with LeaseLost, and
    nothing of the step is written — not the message, not its event, not the thread touched,
    not its tool calls, not the run's end (every write of the step's one statement needs the
    thread)."""
    claimed = await _claimed(container)
    identity, runs = claimed.identity, container.services.runs
    thread = {"t": identity.thread_id}
    if how == "deleted":
        await sql(container, "DELETE FROM conversations WHERE thread_id = :t", **thread)
    else:
        other = await make_user(container, name="other")
        await sql(
            container, "UPDATE conversations SET uid = :o WHERE thread_id = :t", o=other, **thread
        )
    before = await _rows(
        container, "SELECT updated_at FROM conversations WHERE thread_id = :t", **thread
    )
    events = "SELECT count(*) FROM run_events WHERE run_id = :r"
    count = (await _rows(container, events, r=identity.run_id))[0][0]
    with pytest.raises(LeaseLost):
        async with runs.recording(identity) as record:
            record.tool_calls("", [ProposedToolCall("qzxgone-call", "read_workspace_file", {})])
            record.reply("the answer qzxgone")
            record.finish("completed", output={"reply": "qzxgone"})
    assert (await _rows(container, events, r=identity.run_id))[0][0] == count
    assert await _rows(container, "SELECT 1 FROM tool_calls") == []
    status = "SELECT status FROM agent_runs WHERE id = :r"
    assert await _rows(container, status, r=identity.run_id) == (
        [] if how == "deleted" else [("running",)]  # a deleted thread takes its runs with it
    )
    assert (
        await _rows(container, "SELECT 1 FROM messages WHERE content = 'the answer qzxgone'") == []
    )
    assert (
        await _rows(
            container, "SELECT updated_at FROM conversations WHERE thread_id = :t", **thread
        )
        == before
    )


async def test_a_steps_events_are_one_append_with_the_seqs_of_one_each(
    container: Container,
) -> None:
    """The events of one fenced transaction go in together, in one statement, as it ends: in
    the order they were recorded, each with the seq one append per event would have given (the
    run's last seq, plus one per event), their data exactly as given."""
    runs = container.services.runs
    claimed = await _claimed(container)
    me = claimed.identity
    await runs.start(me, attempt=1, snapshot=("ab" * 32, 3))
    await runs.record_event(me, "token", {"text": "alone"})  # fenced, one statement
    data: list[dict[str, Any]] = [
        {"text": 'Hé 你好 \u2028 "quoted" \\ back'},
        {"n": 1, "x": 2.5, "none": None, "t": True, "list": [1, {"a": []}], "empty": {}},
        {},
    ]
    with counting(container.engine) as seen:
        async with runs.recording(me) as record:
            for item in data:
                record.event("token", item)
            record.reply("Hello")
            record.finish("completed", output={"reply": "Hello"})
    assert len(seen.matching("INSERT INTO run_events")) == 1, seen.statements
    rows = await _rows(
        container,
        "SELECT seq, event_type, data FROM run_events WHERE run_id = :id ORDER BY seq",
        id=me.run_id,
    )
    assert [r.seq for r in rows] == list(range(1, len(rows) + 1))
    assert [r.event_type for r in rows] == [
        *("run_status", "memory_snapshot", "token"),
        *("token", "token", "token", "message", "run_status"),
    ]
    assert [r.data for r in rows[3:6]] == data
    assert rows[-1].data == {"status": "completed"}
    # What the event stream reads: the same events, and the run settled with them.
    page = await container.services.chat.stream_page(me.uid, me.run_id, 3)
    assert [e.seq for e in page.events] == [4, 5, 6, 7, 8] and page.settled


def _lone_event(record: RunRecord, marker: str) -> None:
    record.event("token", {"text": marker})


def _tool_calls(record: RunRecord, marker: str) -> None:
    record.tool_calls(marker, [ProposedToolCall(marker, "read_workspace_file", {"p": marker})])


def _reply_and_end(record: RunRecord, marker: str) -> None:
    record.event("token", {"text": marker})
    record.reply(marker)
    record.finish("completed", output={"reply": marker})


@pytest.mark.parametrize("step", [_lone_event, _tool_calls, _reply_and_end])
async def test_a_step_waits_for_a_lease_change_in_flight_and_is_refused_after_it(
    container: Container, step: Callable[[RunRecord, str], None]
) -> None:
    """A step's one statement takes the run's row (``FOR SHARE``) before it writes anything: a
    reconcile that has failed the run but not committed yet makes it wait, and once that commits
    the step is refused whole — no event, message, tool call or end lands after the run's end."""
    runs = container.services.runs
    me = (await _claimed(container)).identity
    with counting(container.engine) as seen:
        async with runs.recording(me) as record:
            step(record, "你好 before")
    # one statement, outside a transaction block: no BEGIN, no lease read, no COMMIT
    assert [s.split()[:2] for s in seen.statements] == [["WITH", "fence"]], seen.statements
    assert (seen.begins, seen.commits, seen.rollbacks) == (0, 0, 0)
    if step is _reply_and_end:  # settled by the step itself: a new claim for the late one
        me = (await _claimed(container)).identity
    async with container.session_factory() as reconcile:
        await reconcile.execute(
            text("UPDATE agent_runs SET status = 'failed', lease_expires_at = NULL WHERE id = :id"),
            {"id": me.run_id},
        )

        async def late_step() -> None:
            async with runs.recording(me) as record:
                step(record, "LATE-MARKER")

        late = asyncio.create_task(late_step())
        await asyncio.sleep(0.3)
        assert not late.done()  # waiting for the row's lock, not reading the old version
        await reconcile.commit()
    with pytest.raises(LeaseLost):
        await late
    written = await _rows(
        container,
        "SELECT (SELECT json_agg(data) FROM run_events), (SELECT json_agg(content) FROM messages),"
        " (SELECT json_agg(tool_call_id) FROM tool_calls),"
        " (SELECT json_agg(output) FROM agent_runs WHERE id = :id),"
        " (SELECT status FROM agent_runs WHERE id = :id)",
        id=me.run_id,
    )
    assert "你好 before" in str(written)
    assert "LATE-MARKER" not in str(written)
    assert written[0][-1] == "failed"


async def _calls(c: Container, thread_id: str) -> dict[str, tuple[str, str | None]]:
    rows = await _rows(
        c,
        "SELECT c.tool_call_id, c.status, c.output FROM tool_calls c JOIN messages m"
        " ON m.id = c.message_id JOIN conversations t ON t.id = m.conversation_id"
        " WHERE t.thread_id = :t ORDER BY c.id",
        t=thread_id,
    )
    return {r.tool_call_id: (r.status, r.output) for r in rows}


async def test_a_step_writes_what_its_records_would_have_written_one_by_one(
    container: Container,
) -> None:
    """A step's statement shares one snapshot across its parts, which do not see each other's
    rows; what the step records is folded so the result is what writing each record in turn
    gave (``StepWrites.parameters``):

    * messages get ids in the order recorded, and the ``message`` event carries the reply's;
    * a call finished in the step that proposes it is stored finished;
    * a call the step finishes is not closed by the same step's failure (one row is never
      updated twice), and a call it proposes and leaves open is closed with the failure;
    * a call finished by id is the newest of that id in the run's own thread only."""
    runs = container.services.runs
    me = (await _claimed(container)).identity
    other = (await _claimed(container)).identity  # another user's thread, same call id
    async with runs.recording(other) as record:
        record.tool_calls("", [ProposedToolCall("c-shared", "read_workspace_file", {})])
    async with runs.recording(me) as record:
        record.tool_calls("", [ProposedToolCall("c-shared", "read_workspace_file", {})])
        record.tool_calls("", [ProposedToolCall("c-old", "read_workspace_file", {})])
    async with runs.recording(me) as record:
        record.tool_calls(
            "",
            [
                ProposedToolCall("c-same-step", "read_workspace_file", {}),
                ProposedToolCall("c-left-open", "read_workspace_file", {}),
            ],
        )
        record.tool_result(ToolOutcome("c-same-step", "read_workspace_file", "done 完", "success"))
        record.tool_result(ToolOutcome("c-shared", "read_workspace_file", "mine", "success"))
        record.reply("第一 qzxorder")
        record.finish("failed", error_code="run_error", error_message="boom")
    calls = await _calls(container, me.thread_id)
    assert calls["c-same-step"] == ("success", "done 完")
    assert calls["c-shared"] == ("success", "mine")
    assert calls["c-left-open"][0] == calls["c-old"][0] == "error"
    assert "failed (run_error)" in (calls["c-left-open"][1] or "")
    assert await _calls(container, other.thread_id) == {"c-shared": ("pending", None)}
    messages = await _rows(
        container,
        "SELECT m.id, m.message_type, m.content FROM messages m JOIN conversations t"
        " ON t.id = m.conversation_id WHERE t.thread_id = :t AND m.role <> 'user' ORDER BY m.id",
        t=me.thread_id,
    )
    assert [(m.message_type, m.content) for m in messages][-4:] == [
        ("tool_call", ""),
        ("tool_result", "done 完"),
        ("tool_result", "mine"),
        ("text", "第一 qzxorder"),
    ]
    (event,) = await _rows(
        container,
        "SELECT data FROM run_events WHERE run_id = :r AND event_type = 'message'",
        r=me.run_id,
    )
    assert event.data == {
        "message_id": messages[-1].id,
        "role": "assistant",
        "content": "第一 qzxorder",
    }


async def test_a_thread_taken_away_while_its_step_waits_fails_the_whole_step(
    container: Container,
) -> None:
    """A step whose thread changes hands while the step's statement waits for the thread's row
    (the change not committed yet) sees the change once it commits — the statement checks the
    thread again on the row it finally locks — and writes nothing: no message, no tool call,
    no event, not the run's end (every write of the statement needs the thread)."""
    runs = container.services.runs
    me = (await _claimed(container)).identity
    other = await make_user(container, name="qzxother")
    events = await _rows(
        container, "SELECT count(*) FROM run_events WHERE run_id = :r", r=me.run_id
    )
    async with container.session_factory() as takeover:
        await takeover.execute(
            text("UPDATE conversations SET uid = :o WHERE thread_id = :t"),
            {"o": other, "t": me.thread_id},
        )

        async def step() -> None:
            async with runs.recording(me) as record:
                record.tool_calls("", [ProposedToolCall("qzxmid-call", "read_workspace_file", {})])
                record.reply("qzxmid reply")
                record.finish("completed", output={"reply": "qzxmid"})

        waiting = asyncio.create_task(step())
        await asyncio.sleep(0.3)
        assert not waiting.done()  # waiting for the thread's row
        await takeover.commit()
    with pytest.raises(LeaseLost, match="thread"):
        await waiting
    assert await _rows(container, "SELECT 1 FROM messages WHERE content LIKE 'qzxmid%'") == []
    assert await _rows(container, "SELECT 1 FROM tool_calls") == []
    assert (
        await _rows(container, "SELECT count(*) FROM run_events WHERE run_id = :r", r=me.run_id)
        == events
    )
    status = await _rows(container, "SELECT status FROM agent_runs WHERE id = :r", r=me.run_id)
    assert status == [("running",)]


async def test_the_claim_tells_how_the_threads_previous_run_ended_and_the_start_closes_its_calls(
    container: Container,
) -> None:
    """A chat run's claim reads how the thread's previous chat/resume run ended and whether
    tool calls are still open (``ClaimedRun.previous``); the start closes them in its one
    statement, telling why. A first run, and a resume run, are told nothing."""
    runs, chat = container.services.runs, container.services.chat
    uid = await make_user(container)
    thread = (await chat.create_thread(uid)).thread_id
    first, _ = await chat.submit(uid, thread, "hello qzxfirst")
    claimed = await runs.claim(first.id)
    assert claimed is not None and claimed.previous is None
    await runs.record_tool_calls(
        claimed.identity, "", [ProposedToolCall("qzx-open", "read_workspace_file", {})]
    )
    await sql(
        container,
        "UPDATE agent_runs SET status = 'failed', error_code = 'run_error', finished_at = now()"
        " WHERE id = :id",
        id=first.id,
    )

    second, _ = await chat.submit(uid, thread, "again qzxsecond")
    claimed = await runs.claim(second.id)
    assert claimed is not None and claimed.previous == PreviousRun("failed", "run_error", True)
    why = claimed.previous.why
    assert why is not None and "failed (run_error)" in why
    with counting(container.engine) as seen:
        await runs.start(claimed.identity, attempt=1, snapshot=None, previous=claimed.previous)
    assert len(seen.statements) == 1, seen.statements
    calls = await _rows(container, "SELECT status, error FROM tool_calls")
    assert [tuple(c) for c in calls] == [("error", why)]  # the only call there is, closed
    await runs.finish(claimed.identity, "completed", output={"reply": "ok"})

    # Another user's call still open (their run in flight) is nothing to this thread.
    other = await make_user(container, name="qzxother")
    their = (await chat.create_thread(other)).thread_id
    theirs, _ = await chat.submit(other, their, "theirs qzxtheirs")
    claimed_theirs = await runs.claim(theirs.id)
    assert claimed_theirs is not None
    await runs.record_tool_calls(
        claimed_theirs.identity, "", [ProposedToolCall("qzx-theirs", "read_workspace_file", {})]
    )

    third, _ = await chat.submit(uid, thread, "and qzxthird")
    claimed = await runs.claim(third.id)
    assert claimed is not None and claimed.previous == PreviousRun("completed", None, False)
    assert claimed.previous.why is None
    await sql(container, "UPDATE agent_runs SET status = 'interrupted' WHERE id = :id", id=third.id)
    resume, _ = await chat.resume(uid, third.id, "approve")
    claimed = await runs.claim(resume.id)
    assert claimed is not None and claimed.run_type == "resume" and claimed.previous is None
