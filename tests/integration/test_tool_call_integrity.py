"""Issue 17 through the OpenAI wire format: a scripted, streaming OpenAI-compatible server.

1. A tool call from a cut-off or malformed response never executes (no file changes) and the
   model is told; a model that keeps doing it ends the run as ``model_output_truncated``.
2. After a cancel, a failure or a limit between a tool call and its result, the thread's next
   message completes against a provider that refuses unanswered tool calls (as OpenAI does).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.factories import chat_once, make_user, memory_file, sha256_of, sql
from tests.support.scripted_openai import ScriptedOpenAI, ToolCallScript, Turn, running
from yuxi.bootstrap import Container
from yuxi.runtime.worker import Worker
from yuxi.services.runs.service import RunService
from yuxi.settings import Settings
from yuxi.workspace.filesystem import Workspace

CUT_REMEMBER = ToolCallScript("remember_memory", '{"content": "I drink oolo')
CUT_WRITE = ToolCallScript("write_workspace_file", '{"path": "notes/x.md", "content": "half')
SEARCH = ToolCallScript("search_thread_messages", '{"query": "oolong"}')


@pytest.fixture
def scripted() -> Iterator[ScriptedOpenAI]:
    yield from running()


@pytest.fixture
def settings(database_url: str, tmp_path: Path, scripted: ScriptedOpenAI) -> Settings:
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        db_pool_size=20,
        model="openai:gpt-scripted",
        model_base_url=scripted.base_url,
        model_api_key="test-key",
        heartbeat_seconds=0.1,
    )


def _tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m.get("role") == "tool"]


def _workspace_file(container: Container, uid: str, path: str) -> Path:
    return Workspace(container.settings.workspace_root, uid).directory / path


@pytest.mark.parametrize("finish_reason", ["length", None], ids=["length", "stream-dropped"])
async def test_a_cut_off_remember_changes_nothing_and_the_model_is_told(
    container: Container, worker: Worker, scripted: ScriptedOpenAI, finish_reason: str | None
) -> None:
    uid = await make_user(container, memory=True)
    thread = (await container.services.chat.create_thread(uid)).thread_id
    before = sha256_of(memory_file(container, uid))
    scripted.script(
        Turn(tool_calls=[CUT_REMEMBER], finish_reason=finish_reason),
        Turn(content="My answer was cut off; nothing was saved."),
    )
    run = await chat_once(container, worker, uid, thread, "remember: I drink oolong tea")
    assert run.status == "completed", run.error_message
    assert sha256_of(memory_file(container, uid)) == before
    assert "oolo" not in memory_file(container, uid).read_text()
    (told,) = _tool_messages(scripted.requests[1])
    assert json.loads(told["content"])["code"] == "model_output_truncated"
    assert run.output["reply"] == "My answer was cut off; nothing was saved."
    events = await container.services.chat.events_after(uid, run.id)
    ends = [e.data for e in events if e.event_type == "tool_end"]
    assert [e["status"] for e in ends] == ["error"]


async def test_a_cut_off_file_write_is_neither_executed_nor_put_to_approval(
    container: Container, worker: Worker, scripted: ScriptedOpenAI
) -> None:
    uid = await make_user(container, memory=True)
    thread = (await container.services.chat.create_thread(uid)).thread_id
    scripted.script(Turn(tool_calls=[CUT_WRITE], finish_reason="length"), Turn(content="ok"))
    run = await chat_once(container, worker, uid, thread, "write a note")
    assert run.status == "completed"  # not "interrupted": nobody is asked about a refused call
    assert not _workspace_file(container, uid, "notes/x.md").exists()
    (told,) = _tool_messages(scripted.requests[1])
    assert json.loads(told["content"])["code"] == "model_output_truncated"


async def test_non_json_arguments_give_the_model_a_tool_error(
    container: Container, worker: Worker, scripted: ScriptedOpenAI
) -> None:
    uid = await make_user(container, memory=True)
    thread = (await container.services.chat.create_thread(uid)).thread_id
    before = sha256_of(memory_file(container, uid))
    scripted.script(
        Turn(
            tool_calls=[ToolCallScript("remember_memory", "content = oolong")],
            finish_reason="tool_calls",
        ),
        Turn(content="I will try again later."),
    )
    run = await chat_once(container, worker, uid, thread, "remember: oolong")
    assert run.status == "completed"
    assert run.output["reply"] == "I will try again later."
    (told,) = _tool_messages(scripted.requests[1])
    assert json.loads(told["content"])["code"] == "invalid_tool_call"
    assert sha256_of(memory_file(container, uid)) == before
    # The thread stays usable: the next request carries no unanswered call.
    scripted.script(Turn(content="hello again"))
    again = await chat_once(container, worker, uid, thread, "hi")
    assert again.status == "completed" and scripted.refused == []


async def test_a_model_that_keeps_cutting_off_ends_the_run_clearly(
    container: Container, worker: Worker, scripted: ScriptedOpenAI
) -> None:
    uid = await make_user(container, memory=True)
    thread = (await container.services.chat.create_thread(uid)).thread_id
    before = sha256_of(memory_file(container, uid))
    scripted.script(*[Turn(tool_calls=[CUT_REMEMBER], finish_reason="length")] * 5)
    run = await chat_once(container, worker, uid, thread, "remember: I drink oolong tea")
    assert (run.status, run.error_code) == ("failed", "model_output_truncated")
    assert sha256_of(memory_file(container, uid)) == before
    scripted.turns.clear()
    scripted.script(Turn(content="fine now"))
    after = await chat_once(container, worker, uid, thread, "hello?")
    assert after.status == "completed" and after.output["reply"] == "fine now"
    assert scripted.refused == []


# -- a thread survives the end of a run between a call and its result ---------------------------


def _hang_the_search_tool(container: Container, monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """The history search never returns (until the test undoes the patch); the event is set
    when a run is inside it: between its tool call and that call's result."""
    started = asyncio.Event()

    async def hang(**_: Any) -> Any:
        started.set()
        await asyncio.Event().wait()

    monkeypatch.setattr(container.services.lookback, "search_thread_messages", hang)
    return started


async def _a_run_inside_a_tool(
    container: Container, worker: Worker, scripted: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, str, Any, asyncio.Task[bool]]:
    """A user, a thread and its run, executing, stopped between a tool call and its result."""
    uid = await make_user(container, memory=True)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    started = _hang_the_search_tool(container, monkeypatch)
    scripted.script(Turn(tool_calls=[SEARCH], finish_reason="tool_calls"))
    run, _ = await chat.submit(uid, thread, "search history: oolong")
    working = asyncio.create_task(worker.run_once())
    await asyncio.wait_for(started.wait(), 30)
    return uid, thread, run, working


async def _thread_keeps_working(
    container: Container,
    worker: Worker,
    scripted: ScriptedOpenAI,
    uid: str,
    thread: str,
    *,
    closure_expected: bool = True,
) -> bool:
    """The next message completes against a provider that refuses unanswered calls; returns
    whether an open call had to be closed for it."""
    scripted.turns.clear()
    scripted.script(Turn(content="still here"))
    nxt = await chat_once(container, worker, uid, thread, "are you there?")
    assert nxt.status == "completed", nxt.error_message
    assert nxt.output["reply"] == "still here"
    assert scripted.refused == []
    codes = [json.loads(m["content"]).get("code") for m in _tool_messages(scripted.requests[-1])]
    closed = "tool_call_not_completed" in codes
    assert closed or not closure_expected
    detail = await container.services.chat.get_thread(uid, thread)
    calls = [c for m in detail.messages for c in m.tool_calls]
    assert calls and all(c.status != "pending" for c in calls)
    return closed


async def test_a_run_cancelled_between_call_and_result_leaves_a_working_thread(
    container: Container, worker: Worker, scripted: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid, thread, run, working = await _a_run_inside_a_tool(container, worker, scripted, monkeypatch)
    chat = container.services.chat
    await chat.cancel(uid, run.id)
    await asyncio.wait_for(working, 30)
    assert (await chat.get_run(uid, run.id)).status == "cancelled"
    detail = await chat.get_thread(uid, thread)
    (call,) = [c for m in detail.messages for c in m.tool_calls]
    assert call.status == "error" and "cancelled" in (call.result or "")
    monkeypatch.undo()
    await _thread_keeps_working(container, worker, scripted, uid, thread)


async def test_a_run_failed_between_call_and_result_leaves_a_working_thread(
    container: Container, worker: Worker, scripted: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid = await make_user(container, memory=True)
    thread = (await container.services.chat.create_thread(uid)).thread_id
    real = RunService.recording

    @asynccontextmanager
    async def record_then_fail(self: RunService, identity: Any) -> AsyncIterator[Any]:
        # The step that records the tool calls commits; then the run fails.
        wrote: list[bool] = []
        async with real(self, identity) as record:
            record_calls = record.tool_calls

            def tool_calls(*args: Any, **kwargs: Any) -> None:
                wrote.append(True)
                record_calls(*args, **kwargs)

            record.tool_calls = tool_calls  # type: ignore[method-assign]
            yield record
        if wrote:
            raise RuntimeError("the database went away after the tool calls were recorded")

    monkeypatch.setattr(RunService, "recording", record_then_fail)
    scripted.script(Turn(tool_calls=[SEARCH], finish_reason="tool_calls"))
    run = await chat_once(container, worker, uid, thread, "search history: oolong")
    assert (run.status, run.error_code) == ("failed", "run_error")
    monkeypatch.undo()
    await _thread_keeps_working(container, worker, scripted, uid, thread)


async def test_a_run_stopped_by_its_step_limit_leaves_a_working_thread(
    container: Container, worker: Worker, scripted: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Where a step limit lands depends on how many graph nodes a tool round has: try a range
    # of limits, so some stop between a tool call and its result, whatever the middleware.
    uid = await make_user(container, memory=True)
    closed: list[bool] = []
    for limit in range(5, 11):
        thread = (await container.services.chat.create_thread(uid)).thread_id
        monkeypatch.setattr("yuxi.runtime.executor.RUN_MAX_STEPS", limit)
        scripted.turns.clear()
        scripted.script(*[Turn(tool_calls=[SEARCH], finish_reason="tool_calls")] * 10)
        run = await chat_once(container, worker, uid, thread, "search forever")
        assert (run.status, run.error_code) == ("failed", "run_step_limit")
        monkeypatch.undo()  # the next message runs with the real limit
        closed.append(
            await _thread_keeps_working(
                container, worker, scripted, uid, thread, closure_expected=False
            )
        )
    assert any(closed), closed


async def test_a_run_whose_worker_lost_its_lease_leaves_a_working_thread(
    container: Container, worker: Worker, scripted: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid, thread, run, working = await _a_run_inside_a_tool(container, worker, scripted, monkeypatch)
    chat = container.services.chat
    await sql(
        container,
        "UPDATE agent_runs SET lease_expires_at = now() - interval '1 second' WHERE id = :id",
        id=run.id,
    )
    await asyncio.wait_for(working, 30)  # the heartbeat sees the lease gone and stops the run
    assert worker.stats.lost == 1
    await worker.reconcile()
    failed = await chat.get_run(uid, run.id)
    assert (failed.status, failed.error_code) == ("failed", "worker_lease_expired")
    monkeypatch.undo()
    await _thread_keeps_working(container, worker, scripted, uid, thread)
