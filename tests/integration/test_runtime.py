"""Real agent runs on real PostgreSQL with the offline model: the memory boundary, live."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest
from sqlalchemy import text

from tests.support.factories import (
    make_user,
    memory_file,
    remember,
    set_memory,
    sha256_of,
    sql,
    tool_payload,
)
from tests.support.waiting import until
from yuxi.bootstrap import Container, build_worker, open_agent_runtime
from yuxi.errors import NotFound
from yuxi.runtime.executor import RunExecutor
from yuxi.runtime.worker import Worker
from yuxi.services.runs.service import ClaimedRun, LeaseLost, RunService
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace


async def _run(container: Container, worker: Worker, uid: str, thread_id: str, text: str):  # type: ignore[no-untyped-def]
    chat = container.services.chat
    run, _ = await chat.submit(uid, thread_id, text)
    assert await worker.run_once()
    done = await chat.get_run(uid, run.id)
    events = await chat.events_after(uid, run.id)
    return done, events


def _tools(events: list) -> list[str]:  # type: ignore[type-arg]
    return [e.data["name"] for e in events if e.event_type == "tool_start"]


async def test_remember_then_recall_in_a_new_thread_then_switch_off(
    container: Container, worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid = await make_user(container, memory=True)
    chat = container.services.chat
    thread_a = (await chat.create_thread(uid)).thread_id
    run_a, events_a = await _run(container, worker, uid, thread_a, "remember: I drink oolong tea")
    assert run_a.status == "completed", run_a.error_message
    assert _tools(events_a) == ["remember_memory"]
    ends = [e.data for e in events_a if e.event_type == "tool_end"]
    assert ends[0]["status"] == "success" and json.loads(ends[0]["result"])["status"] == "updated"
    assert "I drink oolong tea" in memory_file(container, uid).read_text()

    thread_b = (await chat.create_thread(uid)).thread_id
    run_b, _ = await _run(container, worker, uid, thread_b, "what do you remember?")
    assert run_b.status == "completed"
    assert "I drink oolong tea" in run_b.output["reply"]
    assert run_b.memory_snapshot_sha256 and run_b.memory_snapshot_bytes

    await set_memory(container, uid, False)
    before = sha256_of(memory_file(container, uid))
    opened: list[str] = []
    real_prefix = Workspace.read_file_prefix

    async def spy(self: Workspace, path: str, max_bytes: int):  # type: ignore[no-untyped-def]
        opened.append(path)
        return await real_prefix(self, path, max_bytes)

    monkeypatch.setattr(Workspace, "read_file_prefix", spy)
    thread_c = (await chat.create_thread(uid)).thread_id
    run_c, events_c = await _run(container, worker, uid, thread_c, "remember: poison")
    assert run_c.status == "completed"
    assert _tools(events_c) == []
    assert MEMORY_PATH not in opened
    assert sha256_of(memory_file(container, uid)) == before
    assert run_c.memory_snapshot_sha256 is None
    run_d, _ = await _run(container, worker, uid, thread_c, "what do you remember?")
    assert "oolong" not in run_d.output["reply"]


async def test_dead_worker_is_reconciled_and_its_late_writes_refused(
    container: Container, worker: Worker
) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "remember: from the dead")
    claimed = await container.services.runs.claim_next()
    assert claimed is not None and claimed.identity.run_id == run.id and claimed.identity.worker_id
    dead = claimed.identity
    # The dead worker never heartbeats; its lease runs out (by the database clock).
    await sql(
        container,
        "UPDATE agent_runs SET lease_expires_at = now() - interval '1 second' WHERE id = :id",
        id=run.id,
    )
    assert await worker.run_once() is False  # nothing to claim: the run is not re-executed
    assert worker.stats.reconciled == 1
    final = await chat.get_run(uid, run.id)
    assert (final.status, final.error_code) == ("failed", "worker_lease_expired")
    before = sha256_of(memory_file(container, uid))
    late = await remember(
        container,
        {
            "uid": uid,
            "thread_id": thread,
            "run_id": run.id,
            "request_id": run.request_id,
            "worker_id": dead.worker_id,
        },
        "late write",
    )
    assert late["code"] == "unauthorized_run"
    assert sha256_of(memory_file(container, uid)) == before
    runs = container.services.runs
    with pytest.raises(LeaseLost):
        await runs.record_event(dead, "token", {"text": "late"})
    with pytest.raises(LeaseLost):
        await runs.finish(dead, "completed")
    assert (await chat.get_run(uid, run.id)).status == "failed"


async def test_delegation_child_thread_is_hidden_from_history(
    container: Container, worker: Worker
) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, events = await _run(container, worker, uid, thread, "delegate: CHILDMARK-7f3a summarize")
    assert run.status == "completed", run.error_message
    assert _tools(events) == ["delegate_to_subagent"]
    runs = await chat.thread_runs(uid, thread)
    assert [r.run_type for r in runs] == ["chat"]
    async with container.session_factory() as s:
        sub = (
            await s.execute(
                __import__("sqlalchemy").text(
                    "SELECT run_type, status, worker_id FROM agent_runs WHERE run_type='subagent'"
                )
            )
        ).all()
    assert [(r[0], r[1], r[2]) for r in sub] == [("subagent", "completed", None)]
    lookback = container.services.lookback
    found = await tool_payload(
        lambda: lookback.search_thread_messages(uid=uid, query="CHILDMARK-7f3a")
    )
    # The parent thread's own user message matches; the child thread never does.
    assert {item["thread_id"] for item in found["items"]} == {thread}


async def test_approval_interrupt_then_resume_on_the_same_thread(
    container: Container, worker: Worker
) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, events = await _run(container, worker, uid, thread, "write file notes/todo.md: buy 茶")
    assert run.status == "interrupted", run.error_message
    assert [e.event_type for e in events].count("interrupt") == 1
    target = container.workspace(uid).directory / "notes" / "todo.md"
    assert not target.exists()
    resume, created = await chat.resume(uid, run.id, "approve")
    assert created and resume.run_type == "resume" and resume.created_by_run_id == run.id
    assert await worker.run_once()
    done = await chat.get_run(uid, resume.id)
    assert done.status == "completed", done.error_message
    assert done.conversation_thread_id == thread
    assert target.read_text() == "buy 茶"
    again, created_again = await chat.resume(uid, run.id, "approve")
    assert not created_again and again.id == resume.id


async def test_rejected_approval_writes_nothing(container: Container, worker: Worker) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await _run(container, worker, uid, thread, "write file x.md: nope")
    assert run.status == "interrupted"
    resume, _ = await chat.resume(uid, run.id, "reject")
    assert await worker.run_once()
    assert (await chat.get_run(uid, resume.id)).status == "completed"
    assert not (container.workspace(uid).directory / "x.md").exists()


async def test_new_message_while_awaiting_approval_is_refused(
    container: Container, worker: Worker
) -> None:
    from yuxi.errors import Conflict

    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await _run(container, worker, uid, thread, "write file y.md: wait")
    assert run.status == "interrupted"
    with pytest.raises(Conflict):
        await chat.submit(uid, thread, "hello?")


def _use_lease(container: Container, lease_seconds: float, heartbeat_seconds: float) -> None:
    container.settings.lease_seconds = lease_seconds
    container.settings.heartbeat_seconds = heartbeat_seconds
    container.services = replace(
        container.services, runs=RunService(container.uow, lease_seconds=lease_seconds)
    )


async def test_heartbeat_keeps_a_long_run_alive(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_lease(container, 1.0, 0.2)
    real = RunExecutor.execute

    async def lease_past(at: object) -> bool:
        """Whether the database clock is a whole lease past ``at``."""
        async with container.session_factory() as s:
            found = await s.execute(
                text("SELECT now() > CAST(:at AS timestamptz) + interval '1 second'"), {"at": at}
            )
            return bool(found.scalar_one())

    async def slow(self: RunExecutor, claimed: ClaimedRun) -> None:
        run_id = claimed.identity.run_id
        async with container.session_factory() as s:
            found = await s.execute(
                text("SELECT lease_expires_at FROM agent_runs WHERE id = :id"), {"id": run_id}
            )
            first_lease = found.scalar_one()
        # Work on until the first lease has run out and a whole lease more (by the database's
        # clock, which decides): only renewals can have kept the run ours.
        await until("two leases to pass", lambda: lease_past(first_lease), within=30)
        await real(self, claimed)

    monkeypatch.setattr(RunExecutor, "execute", slow)
    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "hello slow")
    async with open_agent_runtime(container) as runtime:
        w = build_worker(container, runtime)
        assert await w.run_once()
    assert (await chat.get_run(uid, run.id)).status == "completed"
    assert w.stats.lost == 0


async def test_a_worker_that_loses_its_lease_stops_and_cannot_finish(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_lease(container, 5.0, 0.2)
    cancelled = asyncio.Event()

    async def stalls(self: RunExecutor, claimed: ClaimedRun) -> None:
        # Someone else takes the run over while we work (e.g. our lease was reconciled).
        await sql(
            container,
            "UPDATE agent_runs SET worker_id = 'w_thief' WHERE id = :id",
            id=claimed.identity.run_id,
        )
        try:
            await asyncio.Event().wait()  # works forever: only a cancel ends it
        except asyncio.CancelledError:
            cancelled.set()
            raise

    monkeypatch.setattr(RunExecutor, "execute", stalls)
    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "hello")
    async with open_agent_runtime(container) as runtime:
        w = build_worker(container, runtime)
        assert await asyncio.wait_for(w.run_once(), 30)
    assert cancelled.is_set()  # the heartbeat found the lease gone and cancelled the work
    assert w.stats.lost == 1
    final = await chat.get_run(uid, run.id)
    assert final.status == "running" and final.finished_at is None  # not ours to finish


async def test_cancel_a_pending_run(container: Container, worker: Worker) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "never runs")
    cancelled = await chat.cancel(uid, run.id)
    assert cancelled.status == "cancelled"
    assert await worker.run_once() is False


async def _checkpoints(container: Container, thread_id: str) -> int:
    async with container.session_factory() as s:
        count = await s.scalar(
            text("SELECT count(*) FROM checkpoints WHERE thread_id = :t"), {"t": thread_id}
        )
    return int(count or 0)


async def test_a_run_saves_one_checkpoint_as_its_graph_exits(
    container: Container, worker: Worker
) -> None:
    """The checkpoint rule (design.md §7 "Checkpoints"): a run with a tool call and a reply —
    a dozen graph steps — saves its checkpoint once, when the graph exits; an interruption
    saves one too, and the resume continues from it."""
    uid = await make_user(container, memory=True)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, events = await _run(container, worker, uid, thread, "remember: qzxcheckpointrule")
    assert run.status == "completed" and _tools(events) == ["remember_memory"]
    assert await _checkpoints(container, thread) == 1

    run, _ = await _run(container, worker, uid, thread, "write file notes/a.md: 一")
    assert run.status == "interrupted", run.error_message
    assert await _checkpoints(container, thread) == 2
    resume, _ = await chat.resume(uid, run.id, "approve")
    assert await worker.run_once()
    assert (await chat.get_run(uid, resume.id)).status == "completed"
    assert await _checkpoints(container, thread) == 3
    assert (container.workspace(uid).directory / "notes" / "a.md").read_text() == "一"


async def test_an_event_stream_page_reads_the_status_first_and_only_the_owners_run(
    container: Container, worker: Worker
) -> None:
    uid, other = await make_user(container), await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "hello")
    page = await chat.stream_page(uid, run.id, 0)
    assert not page.settled and not page.more
    assert [e.event_type for e in page.events] == ["run_status"]
    assert await worker.run_once()
    page = await chat.stream_page(uid, run.id, page.events[-1].seq)
    assert page.settled and page.events[-1].data["status"] == "completed"
    everything = await chat.events_after(uid, run.id)
    assert [e.seq for e in page.events] == [e.seq for e in everything[1:]]
    full = await chat.stream_page(uid, run.id, 0, limit=2)
    assert full.more and len(full.events) == 2
    with pytest.raises(NotFound):
        await chat.stream_page(other, run.id, 0)
