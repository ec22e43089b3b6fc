"""Memory versions on real PostgreSQL: every writer records one with its exact provenance,
concurrent writers form one unbroken chain, a lost commit is repaired on the next write, and
retention is bounded (count and bytes)."""

from __future__ import annotations

import asyncio
import hashlib
import itertools

import pytest
from sqlalchemy.exc import OperationalError

from tests.integration.proc_writer import start_writer, writer_statuses
from tests.support.factories import (
    make_asked_run,
    make_run,
    make_user,
    memory_file,
    remember,
    sha256_of,
)
from yuxi import limits
from yuxi.bootstrap import Container
from yuxi.errors import MemoryConflict, PreconditionFailed
from yuxi.repositories.thread_repository import ThreadRepository
from yuxi.runtime.worker import Worker
from yuxi.services.memory.views import MemoryVersionView
from yuxi.services.unit_of_work import UnitOfWork
from yuxi.workspace.filesystem import MEMORY_PATH

EMPTY_SHA = hashlib.sha256(b"").hexdigest()


async def _chain(container: Container, uid: str) -> list[MemoryVersionView]:
    """The user's retained versions, oldest first."""
    listed = await container.services.memory_versions.list_versions(uid)
    return list(reversed(listed.versions))


async def _assert_one_chain(container: Container, uid: str, *, first_ever: bool = True) -> None:
    versions = await _chain(container, uid)
    assert versions, "no versions"
    if first_ever:
        assert versions[0].parent_sha256 == EMPTY_SHA
    for before, after in itertools.pairwise(versions):
        assert after.parent_sha256 == before.sha256, "a gap in the chain"
    on_disk = sha256_of(memory_file(container, uid)) or EMPTY_SHA
    assert versions[-1].sha256 == on_disk, "the newest version is not the file"


async def _content(container: Container, uid: str, version_id: str) -> str:
    return (await container.services.memory_versions.get_version(uid, version_id)).content


# -- a version for every writer, with its provenance ---------------------------------------------


async def test_tool_add_and_replace_record_agent_versions(container: Container) -> None:
    uid = await make_user(container)
    run, asked = await make_asked_run(container, uid, "remember that I drink tea")
    memory = container.services.memory
    added = await memory.remember_memory(run, "I drink oolong tea", tool_call_id="call-add-1")
    # A newer user message in the same thread is the one that asked for the next write.
    async with container.session_factory() as s, s.begin():
        repo = ThreadRepository(s)
        conversation = await repo.get_owned(uid, run.thread_id)
        assert conversation is not None
        newer = await repo.add_message(conversation, role="user", content="no, pu-erh")
        await repo.add_message(conversation, role="assistant", content="ok")
    replaced = await memory.remember_memory(run, "pu-erh", "oolong", tool_call_id="call-fix-2")
    add, fix = await _chain(container, uid)
    assert (add.version_id, fix.version_id) == (added.version_id, replaced.version_id)
    for version, kind, message_id, call in (
        (add, "add", asked, "call-add-1"),
        (fix, "replace", newer.id, "call-fix-2"),
    ):
        assert (version.actor, version.kind) == ("agent", kind)
        assert (version.run_id, version.thread_id) == (run.run_id, run.thread_id)
        assert (version.message_id, version.tool_call_id) == (message_id, call)
        assert version.target_version_id is None
    assert await _content(container, uid, add.version_id) == "I drink oolong tea\n"
    assert await _content(container, uid, fix.version_id) == "I drink pu-erh tea\n"
    assert fix.size == len(b"I drink pu-erh tea\n")
    await _assert_one_chain(container, uid)
    # An unchanged add records nothing.
    again = await memory.remember_memory(run, "I drink pu-erh tea", tool_call_id="call-3")
    assert again.status == "unchanged" and again.version_id is None
    assert len(await _chain(container, uid)) == 2


async def test_file_api_put_and_delete_record_user_versions(container: Container) -> None:
    uid = await make_user(container, memory=False)
    files = container.services.files
    await files.write_file(uid, MEMORY_PATH, "用户自己写的\n".encode(), if_match="*")
    await files.write_file(
        uid, MEMORY_PATH, "用户自己写的\n".encode(), if_match="*"
    )  # same bytes: no change
    await files.delete_file(uid, MEMORY_PATH)
    edit, delete = await _chain(container, uid)
    assert (edit.actor, edit.kind, delete.actor, delete.kind) == ("user", "edit", "user", "delete")
    for version in (edit, delete):
        assert (version.run_id, version.thread_id) == (None, None)
        assert (version.message_id, version.tool_call_id) == (None, None)
    assert await _content(container, uid, edit.version_id) == "用户自己写的\n"
    assert (delete.sha256, delete.size) == (EMPTY_SHA, 0)
    assert await _content(container, uid, delete.version_id) == ""
    assert not memory_file(container, uid).exists()
    await _assert_one_chain(container, uid)


async def _tool_call_ids(container: Container, uid: str, thread_id: str) -> list[str]:
    thread = await container.services.chat.get_thread(uid, thread_id)
    return [call.tool_call_id for m in thread.messages for call in m.tool_calls]


async def test_a_live_remember_records_the_model_tool_call(
    container: Container, worker: Worker
) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid, title="tea")).thread_id
    run, _ = await chat.submit(uid, thread, "remember: I drink oolong tea")
    assert await worker.run_once()
    assert (await chat.get_run(uid, run.id)).status == "completed"
    user_message = (await chat.get_thread(uid, thread)).messages[0]
    (version,) = await _chain(container, uid)
    (call_id,) = await _tool_call_ids(container, uid, thread)
    assert (version.actor, version.kind, version.run_id) == ("agent", "add", run.id)
    assert (version.thread_id, version.thread_title) == (thread, "tea")
    assert (version.message_id, version.tool_call_id) == (user_message.message_id, call_id)


async def test_an_approved_generic_file_write_records_an_agent_edit(
    container: Container, worker: Worker
) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "write file agents/MEMORY.md: - 全新开始")
    assert await worker.run_once()
    assert (await chat.get_run(uid, run.id)).status == "interrupted"
    assert await _chain(container, uid) == []
    resume, _ = await chat.resume(uid, run.id, "approve")
    assert await worker.run_once()
    assert (await chat.get_run(uid, resume.id)).status == "completed"
    assert memory_file(container, uid).read_text() == "- 全新开始"
    user_message = (await chat.get_thread(uid, thread)).messages[0]
    (version,) = await _chain(container, uid)
    (call_id,) = await _tool_call_ids(container, uid, thread)
    assert (version.actor, version.kind) == ("agent", "edit")
    assert (version.run_id, version.thread_id) == (resume.id, thread)
    assert (version.message_id, version.tool_call_id) == (user_message.message_id, call_id)
    await _assert_one_chain(container, uid)


# -- concurrency: one chain, no gap --------------------------------------------------------------


async def _user_edit(container: Container, uid: str, n: int) -> None:
    memory = container.services.memory
    while True:
        data, etag = await memory.read_memory_file(uid)
        text = data.decode()
        new = (text.rstrip() + "\n\n" if text.strip() else "") + f"user-edit-{n}\n"
        try:
            await memory.write_memory_file(uid, new.encode(), if_match=etag)
            return
        except PreconditionFailed:
            await asyncio.sleep(0)


async def test_concurrent_tool_adds_and_user_edits_form_one_chain(container: Container) -> None:
    uid = await make_user(container)
    runs = [await make_run(container, uid) for _ in range(8)]
    tool = [remember(container, run, f"tool-fact-{i}") for i, run in enumerate(runs)]
    edits = [_user_edit(container, uid, n) for n in range(6)]
    results = await asyncio.gather(*tool, *edits)
    assert all(r["status"] == "updated" for r in results[:8])
    versions = await _chain(container, uid)
    assert len(versions) == 14
    assert sorted(v.kind for v in versions) == ["add"] * 8 + ["edit"] * 6
    assert {v.version_id for v in versions} >= {r["version_id"] for r in results[:8]}
    await _assert_one_chain(container, uid)


async def test_writers_in_separate_processes_form_one_chain(container: Container) -> None:
    uid = await make_user(container)
    procs = [
        await start_writer(
            container, await make_run(container, uid), [f"proc-{p}-fact-{i}" for i in range(4)]
        )
        for p in range(3)
    ]
    edits = asyncio.gather(*(_user_edit(container, uid, n) for n in range(4)))
    statuses = await asyncio.gather(*(writer_statuses(p) for p in procs))
    await edits
    assert statuses == [["updated"] * 4] * 3
    assert len(await _chain(container, uid)) == 16
    await _assert_one_chain(container, uid)


# -- a publish whose record was lost is repaired on the next write -------------------------------


async def test_a_commit_lost_after_the_publish_is_recorded_by_the_next_write(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid = await make_user(container)
    run, _ = await make_asked_run(container, uid)
    first = await remember(container, run, "fact one")
    real_commit = UnitOfWork.commit
    failed: list[bool] = []

    async def lose_the_commit(self: UnitOfWork) -> None:
        if not failed:
            failed.append(True)
            raise OperationalError("COMMIT", {}, Exception("server closed the connection"))
        await real_commit(self)

    monkeypatch.setattr(UnitOfWork, "commit", lose_the_commit)
    lost = await remember(container, run, "LOST-COMMIT-MARK")
    assert failed and lost["status"] == "updated" and "version_id" not in lost
    published = memory_file(container, uid).read_text()
    assert published == "fact one\n\nLOST-COMMIT-MARK\n"
    (only,) = await _chain(container, uid)
    assert only.version_id == first["version_id"]  # the history fell behind the file

    await container.services.memory.write_memory_file(uid, b"rewritten by the user\n")
    recorded, recovered, edit = await _chain(container, uid)
    assert recorded.version_id == first["version_id"]
    assert (recovered.actor, recovered.kind) == ("system", "recovered")
    assert recovered.parent_sha256 == recorded.sha256
    assert await _content(container, uid, recovered.version_id) == published
    assert recovered.sha256 == hashlib.sha256(published.encode()).hexdigest()
    assert (edit.actor, edit.kind, edit.parent_sha256) == ("user", "edit", recovered.sha256)
    await _assert_one_chain(container, uid)


async def test_edits_outside_yuxi_and_memory_older_than_versions_are_recovered(
    container: Container,
) -> None:
    uid = await make_user(container)
    path = memory_file(container, uid)
    path.write_text("written before versions existed\n")
    run, _ = await make_asked_run(container, uid)
    await remember(container, run, "first recorded fact")
    recovered, add = await _chain(container, uid)
    assert (recovered.kind, recovered.parent_sha256) == ("recovered", EMPTY_SHA)
    assert await _content(container, uid, recovered.version_id) == (
        "written before versions existed\n"
    )
    assert add.parent_sha256 == recovered.sha256
    path.write_bytes(b"edited in vim \xff\n")  # outside Yuxi, not even UTF-8
    await container.services.memory.write_memory_file(uid, b"fixed\n")
    *_, outside, fixed = await _chain(container, uid)
    assert outside.sha256 == hashlib.sha256(b"edited in vim \xff\n").hexdigest()
    assert await _content(container, uid, outside.version_id) == "edited in vim \ufffd\n"
    assert fixed.parent_sha256 == outside.sha256
    await _assert_one_chain(container, uid)


# -- retention -----------------------------------------------------------------------------------


async def test_retention_keeps_the_newest_versions_by_count(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MEMORY_VERSIONS_KEEP", 3)
    uid = await make_user(container, memory=False)
    for n in range(6):
        await container.services.memory.write_memory_file(uid, f"state {n}\n".encode())
    versions = await _chain(container, uid)
    assert [await _content(container, uid, v.version_id) for v in versions] == [
        "state 3\n",
        "state 4\n",
        "state 5\n",
    ]
    await _assert_one_chain(container, uid, first_ever=False)


async def test_a_change_whose_parent_is_no_longer_kept_cannot_be_undone(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MEMORY_VERSIONS_KEEP", 1)
    uid = await make_user(container, memory=False)
    await container.services.memory.write_memory_file(uid, b"before\n")
    await container.services.memory.write_memory_file(uid, b"after\n")
    (only,) = await _chain(container, uid)
    with pytest.raises(MemoryConflict, match="no longer kept"):
        await container.services.memory_versions.undo(uid, only.version_id)
    assert memory_file(container, uid).read_text() == "after\n"


async def test_retention_bounds_the_bytes_but_keeps_the_newest(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MEMORY_VERSIONS_MAX_BYTES", 100)
    uid = await make_user(container, memory=False)
    memory = container.services.memory
    for n in range(5):
        await memory.write_memory_file(uid, (f"{n}" * 29 + "\n").encode())  # 30 bytes each
    versions = await _chain(container, uid)
    assert [v.size for v in versions] == [30, 30, 30]  # 90 ≤ 100; a fourth would pass it
    assert sum(v.size for v in versions) <= 100
    await memory.write_memory_file(uid, ("记" * 50 + "\n").encode())  # 151 bytes alone
    (newest,) = await _chain(container, uid)
    assert newest.size == 151
    await _assert_one_chain(container, uid, first_ever=False)
