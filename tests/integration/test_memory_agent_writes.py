"""An agent's generic file tools writing MEMORY.md pass the same gate as ``remember_memory``
(real PostgreSQL): the switch is read again and the lease checked under the lock when the
(approved) write lands; refused → the file and the history unchanged. The owner's own edits
keep working while memory is off."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.support.factories import (
    make_asked_run,
    make_user,
    memory_file,
    set_memory,
    sha256_of,
    sql,
    tool_payload,
)
from yuxi.bootstrap import Container
from yuxi.identity import RunIdentity
from yuxi.runtime.worker import Worker
from yuxi.services.memory.service import MemoryService
from yuxi.services.workspace_file_service import WorkspaceFileService


class _Written:
    def to_payload(self) -> dict[str, Any]:
        return {"status": "written"}


async def _agent_write(
    container: Container, run: RunIdentity, data: bytes, if_match: str | None = None
) -> dict[str, Any]:
    async def call() -> _Written:
        await container.services.memory.agent_write_memory_file(
            run, data, tool_call_id="call-w", if_match=if_match
        )
        return _Written()

    return await tool_payload(call)


async def _versions(container: Container, uid: str) -> int:
    return len((await container.services.memory_versions.list_versions(uid)).versions)


async def test_a_write_landing_after_memory_was_turned_off_is_refused(
    container: Container,
) -> None:
    uid = await make_user(container)
    memory_file(container, uid).write_text("kept\n")
    run, _ = await make_asked_run(container, uid, "write file agents/MEMORY.md: x")
    await set_memory(container, uid, False)
    before = sha256_of(memory_file(container, uid))
    refused = await _agent_write(container, run, b"AGENT-OFF-MARK\n")
    assert refused["code"] == "memory_disabled"
    assert sha256_of(memory_file(container, uid)) == before
    assert await _versions(container, uid) == 0
    # The owner's own edit still works with memory off.
    await container.services.memory.write_memory_file(uid, b"the owner's text\n")
    assert memory_file(container, uid).read_text() == "the owner's text\n"


@pytest.mark.parametrize(
    "steal",
    [
        "UPDATE agent_runs SET worker_id = 'w_thief' WHERE id = :id",
        "UPDATE agent_runs SET lease_expires_at = now() - interval '1 second' WHERE id = :id",
        "UPDATE agent_runs SET status = 'failed' WHERE id = :id",
        "UPDATE agent_runs SET cancel_requested = true WHERE id = :id",
    ],
    ids=["other-worker", "expired", "settled", "cancel-requested"],
)
async def test_a_worker_without_a_live_lease_cannot_write(container: Container, steal: str) -> None:
    uid = await make_user(container)
    memory_file(container, uid).write_text("kept\n")
    run, _ = await make_asked_run(container, uid)
    await sql(container, steal, id=run.run_id)
    before = sha256_of(memory_file(container, uid))
    refused = await _agent_write(container, run, b"LEASE-LOST-MARK\n")
    assert refused["code"] == "unauthorized_run"
    assert sha256_of(memory_file(container, uid)) == before
    assert await _versions(container, uid) == 0


async def test_a_live_run_writes_and_if_match_guards_the_edit(container: Container) -> None:
    uid = await make_user(container)
    run, asked = await make_asked_run(container, uid)
    assert (await _agent_write(container, run, b"agent text\n"))["status"] == "written"
    stale = await _agent_write(container, run, b"stale\n", if_match='"not-the-etag"')
    assert stale["code"] == "precondition_failed"
    assert memory_file(container, uid).read_text() == "agent text\n"
    (version,) = (await container.services.memory_versions.list_versions(uid)).versions
    assert (version.actor, version.kind, version.run_id) == ("agent", "edit", run.run_id)
    assert (version.message_id, version.tool_call_id) == (asked, "call-w")


# -- live: the approved write lands after the switch went off / the lease was lost --------------


def _before_the_write_lands(
    monkeypatch: pytest.MonkeyPatch, meanwhile: Callable[[RunIdentity], Awaitable[None]]
) -> None:
    """Run ``meanwhile`` after the resumed graph was built (memory on, tools allowed) and just
    before the approved write reaches the lock: the window the check under the lock closes."""
    real = MemoryService.agent_write_memory_file

    async def late(self: MemoryService, identity: RunIdentity, data: bytes, **kw: Any) -> str:
        await meanwhile(identity)
        return await real(self, identity, data, **kw)

    monkeypatch.setattr(MemoryService, "agent_write_memory_file", late)


async def _approve_a_memory_write(container: Container, worker: Worker, uid: str) -> str:
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "write file agents/MEMORY.md: - LATE-WRITE-MARK")
    assert await worker.run_once()
    assert (await chat.get_run(uid, run.id)).status == "interrupted"
    resume, _ = await chat.resume(uid, run.id, "approve")
    assert await worker.run_once()
    return resume.id


async def test_approved_write_refused_when_memory_went_off_before_it_landed(
    container: Container, worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid = await make_user(container)
    memory_file(container, uid).write_text("kept\n")
    before = sha256_of(memory_file(container, uid))

    async def switch_off(identity: RunIdentity) -> None:
        await set_memory(container, identity.uid, False)

    _before_the_write_lands(monkeypatch, switch_off)
    resume_id = await _approve_a_memory_write(container, worker, uid)
    resumed = await container.services.chat.get_run(uid, resume_id)
    assert resumed.status == "completed", resumed.error_message
    ends = [
        e.data
        for e in await container.services.chat.events_after(uid, resume_id)
        if e.event_type == "tool_end"
    ]
    assert [(e["name"], e["status"]) for e in ends] == [("write_workspace_file", "error")]
    assert '"memory_disabled"' in ends[0]["result"]
    assert sha256_of(memory_file(container, uid)) == before
    assert await _versions(container, uid) == 0


async def test_approved_write_of_a_worker_that_lost_its_lease_is_refused(
    container: Container, worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid = await make_user(container)
    memory_file(container, uid).write_text("kept\n")
    before = sha256_of(memory_file(container, uid))

    async def steal(identity: RunIdentity) -> None:
        await sql(
            container,
            "UPDATE agent_runs SET worker_id = 'w_thief' WHERE id = :id",
            id=identity.run_id,
        )

    _before_the_write_lands(monkeypatch, steal)
    resume_id = await _approve_a_memory_write(container, worker, uid)
    resumed = await container.services.chat.get_run(uid, resume_id)
    assert resumed.status == "running" and resumed.finished_at is None  # not its to finish
    assert sha256_of(memory_file(container, uid)) == before
    assert "LATE-WRITE-MARK" not in memory_file(container, uid).read_text()
    assert await _versions(container, uid) == 0


async def test_approved_write_of_an_ordinary_file_by_a_worker_that_lost_its_lease_is_refused(
    container: Container, worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10 §2 for every workspace file, not only MEMORY.md."""
    uid = await make_user(container)
    real = WorkspaceFileService.agent_rewrite_file

    async def late(self: WorkspaceFileService, identity: RunIdentity, *a: Any, **kw: Any) -> bytes:
        await sql(
            container,
            "UPDATE agent_runs SET worker_id = 'w_thief' WHERE id = :id",
            id=identity.run_id,
        )
        return await real(self, identity, *a, **kw)

    monkeypatch.setattr(WorkspaceFileService, "agent_rewrite_file", late)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "write file notes/late.md: LATE-FILE-MARK")
    assert await worker.run_once()
    assert (await chat.get_run(uid, run.id)).status == "interrupted"
    resume, _ = await chat.resume(uid, run.id, "approve")
    assert await worker.run_once()
    resumed = await chat.get_run(uid, resume.id)
    assert resumed.status == "running" and resumed.finished_at is None  # not its to finish
    assert not (container.workspace(uid).directory / "notes" / "late.md").exists()


async def test_an_approved_ordinary_file_write_lands_under_a_live_lease(
    container: Container, worker: Worker
) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "write file notes/ok.md: 写入成功")
    assert await worker.run_once()
    resume, _ = await chat.resume(uid, run.id, "approve")
    assert await worker.run_once()
    assert (await chat.get_run(uid, resume.id)).status == "completed"
    path = container.workspace(uid).directory / "notes" / "ok.md"
    assert path.read_text("utf-8") == "写入成功"
