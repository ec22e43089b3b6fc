"""One compiled chatbot graph, many runs: nothing of one run reaches another.

The runtime compiles the chatbot graph once per configuration and every run brings its own
RunContext (identity, workspace, prompt, memory snapshot, SubAgent runner). Two users' runs go
through the real worker at the same time, on the same cached graph, each with its own marker in
MEMORY.md, AGENTS.md, USER.md and a workspace file: every model call and every tool result of a
run holds that run's markers and none of the other's. If the cache leaked (a tool or middleware
bound to the run that compiled it, a prompt compiled into the graph), the second run would see
the first one's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.agent_fakes import CapturingModel
from tests.support.factories import make_user, memory_file, sha256_of
from yuxi.bootstrap import Container, build_worker
from yuxi.db.checkpointer import open_checkpointer
from yuxi.runtime.agent_runtime import AgentRuntime, RunLimits
from yuxi.runtime.worker import Worker
from yuxi.workspace.filesystem import AGENTS_PATH, MEMORY_PATH, USER_PATH, Workspace

NOTE = "notes/private.md"
PLACES = ("memory", "agents", "user", "file")


def _markers(who: str) -> dict[str, str]:
    return {place: f"{who.upper()}-{place.upper()}-MARKER-5e81" for place in PLACES}


@pytest.fixture
async def runtime_and_worker(
    container: Container,
) -> AsyncIterator[tuple[AgentRuntime, CapturingModel, Worker]]:
    s = container.settings
    model = CapturingModel()
    async with open_checkpointer(container.database_url) as saver:
        runtime = AgentRuntime(
            model=model,
            checkpointer=saver,
            limits=RunLimits(s.run_model_call_limit, s.run_tool_call_limit, s.run_timeout_seconds),
            metrics=container.metrics,
        )
        yield runtime, model, build_worker(container, runtime, name="cache-worker")


async def _user(container: Container, who: str) -> str:
    uid = await make_user(container, memory=True, name=who)
    ws = container.workspace(uid)
    marks = _markers(who)
    await ws.replace_file(MEMORY_PATH, f"- {marks['memory']}\n".encode())
    await ws.replace_file(AGENTS_PATH, f"Workspace rule {marks['agents']}.\n".encode())
    await ws.replace_file(USER_PATH, f"The user is {marks['user']}.\n".encode())
    await ws.replace_file(NOTE, f"private note {marks['file']}\n".encode())
    return uid


def _owner(text: str) -> set[str]:
    """Whose markers ``text`` holds."""
    return {who for who in ("ann", "bob") if any(m in text for m in _markers(who).values())}


async def test_two_users_runs_on_one_cached_graph_see_only_their_own_data(
    container: Container,
    runtime_and_worker: tuple[AgentRuntime, CapturingModel, Worker],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime, model, worker = runtime_and_worker
    chat = container.services.chat
    uids = {who: await _user(container, who) for who in ("ann", "bob")}
    runs = {}
    for who, uid in uids.items():
        thread = (await chat.create_thread(uid)).thread_id
        runs[who], _ = await chat.submit(uid, thread, f"read file: {NOTE}")

    # Both runs' tool calls wait for each other: the runs are provably in flight at once, and
    # each one's later model call comes after the other's tool has run on the same graph.
    meeting = asyncio.Barrier(2)
    real_prefix = Workspace.read_file_prefix

    async def meet(self: Workspace, path: str, max_bytes: int) -> Any:
        if path == NOTE:
            await asyncio.wait_for(meeting.wait(), timeout=30)
        return await real_prefix(self, path, max_bytes)

    monkeypatch.setattr(Workspace, "read_file_prefix", meet)
    claimed = [await worker.claim(), await worker.claim()]
    assert all(c is not None for c in claimed)
    await asyncio.gather(*(worker.execute_claimed(c) for c in claimed if c is not None))

    # One configuration (memory on, delegate tool, these limits): one compiled graph.
    assert len(runtime.graphs) == 1
    seen_by: dict[str, int] = {"ann": 0, "bob": 0}
    for messages in model.seen:
        owners = _owner("\n".join(m.text for m in messages))
        assert len(owners) == 1, owners  # a model call holds exactly one run's markers
        (who,) = owners
        seen_by[who] += 1
        text = "\n".join(m.text for m in messages)
        for place in ("memory", "agents", "user"):
            assert _markers(who)[place] in text
    assert seen_by["ann"] >= 2 and seen_by["bob"] >= 2  # before and after each tool call

    for who, uid in uids.items():
        done = await chat.get_run(uid, runs[who].id)
        assert done.status == "completed", done.error_message
        # What was recorded as the run's memory snapshot is the file the model was shown.
        assert done.memory_snapshot_sha256 == sha256_of(memory_file(container, uid))
        events = await chat.events_after(uid, runs[who].id)
        (result,) = [e.data["result"] for e in events if e.event_type == "tool_end"]
        assert _markers(who)["file"] in result and _owner(result) == {who}
        assert done.output is not None and _owner(done.output["reply"]) == {who}
