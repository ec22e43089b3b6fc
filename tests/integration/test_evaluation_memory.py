"""An evaluation sees the user's memory but never changes it; an agent call may (issue 10 §6)."""

from __future__ import annotations

import json

from tests.support.factories import make_user, memory_file, sha256_of
from yuxi.bootstrap import Container
from yuxi.runtime.worker import Worker


async def _one_shot(container: Container, worker: Worker, uid: str, source: str, text: str):  # type: ignore[no-untyped-def]
    chat = container.services.chat
    run, _ = await chat.submit_agent_call(uid, text, source=source)
    assert await worker.run_once()
    done = await chat.get_run(uid, run.id)
    ends = [e.data for e in await chat.events_after(uid, run.id) if e.event_type == "tool_end"]
    return done, ends


async def test_an_evaluation_run_may_not_change_memory(
    container: Container, worker: Worker
) -> None:
    uid = await make_user(container, memory=True)
    memory_file(container, uid).write_text("- 我喝乌龙茶\n", "utf-8")
    before = sha256_of(memory_file(container, uid))
    for text in ("remember: EVAL-WRITE-MARK", "correct memory: 我喝乌龙茶 => EVAL-FIX-MARK"):
        run, ends = await _one_shot(container, worker, uid, "agent_evaluation", text)
        assert run.status == "completed", run.error_message
        assert [(e["name"], e["status"]) for e in ends] == [("remember_memory", "error")]
        assert json.loads(ends[0]["result"])["code"] == "memory_read_only"
    assert sha256_of(memory_file(container, uid)) == before
    assert (await container.services.memory_versions.list_versions(uid)).versions == []
    # It still sees memory (the recall path reads it).
    run, _ = await _one_shot(container, worker, uid, "agent_evaluation", "what do you remember?")
    assert "我喝乌龙茶" in run.output["reply"]


async def test_an_agent_call_may_change_memory(container: Container, worker: Worker) -> None:
    uid = await make_user(container, memory=True)
    run, ends = await _one_shot(container, worker, uid, "agent_call", "remember: CALL-WRITE-MARK")
    assert run.status == "completed"
    assert [(e["name"], e["status"]) for e in ends] == [("remember_memory", "success")]
    assert "CALL-WRITE-MARK" in memory_file(container, uid).read_text("utf-8")
