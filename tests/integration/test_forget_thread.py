"""Forget with the thread (issue 27 §1), on real PostgreSQL: ``thread_memory`` lists exactly the
entries whose source is one of the thread's runs (resume runs included), and a delete with
``forget_memory`` removes exactly those in one ``user`` / ``forget`` version naming the thread,
in the same transaction as the deletion. Entries edited since, other threads' and other users'
entries stay (unique markers); without the flag, or when archiving, MEMORY.md is byte-identical;
the removal can be undone; another user's thread is NotFound with nothing changed."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from tests.support.factories import make_run, make_user, memory_file, remember, sha256_of
from yuxi import limits
from yuxi.bootstrap import Container
from yuxi.errors import MemoryConflict, NotFound
from yuxi.identity import RunIdentity


def _marker(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:12]}"


async def _write(c: Container, run: RunIdentity, text: str) -> None:
    payload = await remember(c, run, text)
    assert payload["status"] == "updated", payload


async def _finish(c: Container, run: RunIdentity) -> None:
    await c.services.runs.finish(run, "completed")


async def _versions(c: Container, uid: str) -> list[str]:
    return [v.version_id for v in (await c.services.memory_versions.list_versions(uid)).versions]


@dataclass
class World:
    uid: str
    thread_a: str
    thread_b: str
    stranger: str
    a_chat: str  # written by thread A's chat run
    a_resume: str  # written by thread A's resume run
    a_edited: str  # written by thread A, then edited by the user
    b_entry: str  # written by thread B
    mine: str  # written by the user
    theirs: str  # written by another user's thread


async def _world(c: Container) -> World:
    chat = c.services.chat
    uid, stranger = await make_user(c), await make_user(c, name="stranger")
    thread_a = (await chat.create_thread(uid, title="A")).thread_id
    thread_b = (await chat.create_thread(uid, title="B")).thread_id
    m = {k: _marker(k) for k in ("a_chat", "a_resume", "a_edit", "b", "mine", "theirs")}

    run = await make_run(c, uid, thread_a)
    await _write(c, run, f"A chat {m['a_chat']}")
    await _write(c, run, f"A to edit {m['a_edit']}")
    await _finish(c, run)
    resume = await make_run(c, uid, thread_a, run_type="resume")
    await _write(c, resume, f"A resume {m['a_resume']}")
    await _finish(c, resume)
    run_b = await make_run(c, uid, thread_b)
    await _write(c, run_b, f"B {m['b']}")
    await _finish(c, run_b)
    other = await make_run(c, stranger)
    await _write(c, other, f"theirs {m['theirs']}")

    # The user edits one of A's entries and adds their own.
    data, etag = await c.services.memory.read_memory_file(uid)
    text = data.decode().replace(f"A to edit {m['a_edit']}", f"A edited {m['a_edit']}")
    text += f"\nmine {m['mine']}\n"
    await c.services.memory.write_memory_file(uid, text.encode(), if_match=etag)
    return World(
        uid,
        thread_a,
        thread_b,
        stranger,
        a_chat=f"A chat {m['a_chat']}",
        a_resume=f"A resume {m['a_resume']}",
        a_edited=f"A edited {m['a_edit']}",
        b_entry=f"B {m['b']}",
        mine=f"mine {m['mine']}",
        theirs=f"theirs {m['theirs']}",
    )


async def test_only_this_threads_entries_are_forgotten_and_undo_restores(
    container: Container,
) -> None:
    c, chat = container, container.services.chat
    w = await _world(c)
    path, theirs_path = memory_file(c, w.uid), memory_file(c, w.stranger)
    before, theirs_before = path.read_bytes(), sha256_of(theirs_path)

    listed = await chat.thread_memory(w.uid, w.thread_a)
    texts = [e.text for e in listed.entries]
    assert len(texts) == 2
    assert any(w.a_chat in t for t in texts) and any(w.a_resume in t for t in texts)
    assert all(e.source is not None and e.source.thread_id == w.thread_a for e in listed.entries)
    assert {e.source.thread_title for e in listed.entries if e.source} == {"A"}
    b_listed = await chat.thread_memory(w.uid, w.thread_b)
    assert [e.text for e in b_listed.entries] == [w.b_entry]

    result = await chat.delete_thread(w.uid, w.thread_a, forget_memory=True)
    assert result is not None and result.version is not None
    assert sorted(result.removed) == sorted(texts)
    after = path.read_text()
    assert w.a_chat not in after and w.a_resume not in after
    for kept in (w.a_edited, w.b_entry, w.mine):
        assert kept in after
    assert theirs_before == sha256_of(theirs_path)
    assert w.theirs not in after and w.theirs in theirs_path.read_text()
    version = result.version
    assert (version.actor, version.kind, version.thread_id) == ("user", "forget", w.thread_a)
    assert (version.run_id, version.message_id) == (None, None)
    assert result.etag == (await c.services.memory.read_memory_file(w.uid))[1]
    with pytest.raises(NotFound):
        await chat.get_thread(w.uid, w.thread_a)
    with pytest.raises(NotFound):
        await chat.thread_memory(w.uid, w.thread_a)

    undone = await c.services.memory_versions.undo(w.uid, version.version_id)
    assert undone.version.kind == "undo"
    assert path.read_bytes() == before


async def test_without_the_flag_and_when_archiving_memory_is_byte_identical(
    container: Container,
) -> None:
    c, chat = container, container.services.chat
    w = await _world(c)
    path = memory_file(c, w.uid)
    digest, versions = sha256_of(path), await _versions(c, w.uid)

    await chat.archive_thread(w.uid, w.thread_a)
    assert (sha256_of(path), await _versions(c, w.uid)) == (digest, versions)
    # An archived thread still lists what it wrote.
    assert len((await chat.thread_memory(w.uid, w.thread_a)).entries) == 2
    await chat.unarchive_thread(w.uid, w.thread_a)

    assert await chat.delete_thread(w.uid, w.thread_a) is None
    assert (sha256_of(path), await _versions(c, w.uid)) == (digest, versions)
    assert w.a_chat in path.read_text()


async def test_another_users_thread_is_not_found_and_nothing_changes(
    container: Container,
) -> None:
    c, chat = container, container.services.chat
    w = await _world(c)
    path, theirs = memory_file(c, w.uid), memory_file(c, w.stranger)
    digests = (sha256_of(path), sha256_of(theirs))
    with pytest.raises(NotFound):
        await chat.thread_memory(w.stranger, w.thread_a)
    with pytest.raises(NotFound):
        await chat.delete_thread(w.stranger, w.thread_a, forget_memory=True)
    assert (sha256_of(path), sha256_of(theirs)) == digests
    assert (await chat.get_thread(w.uid, w.thread_a)).thread_id == w.thread_a


async def test_a_thread_that_wrote_nothing_is_deleted_without_a_version(
    container: Container,
) -> None:
    c, chat = container, container.services.chat
    w = await _world(c)
    quiet = (await chat.create_thread(w.uid)).thread_id
    path = memory_file(c, w.uid)
    digest, versions = sha256_of(path), await _versions(c, w.uid)
    assert (await chat.thread_memory(w.uid, quiet)).entries == []
    result = await chat.delete_thread(w.uid, quiet, forget_memory=True)
    assert result is not None and (result.removed, result.version) == ([], None)
    assert (sha256_of(path), await _versions(c, w.uid)) == (digest, versions)
    with pytest.raises(NotFound):
        await chat.get_thread(w.uid, quiet)


async def test_a_running_run_of_the_thread_is_cancelled_and_writes_nothing_after(
    container: Container,
) -> None:
    c, chat = container, container.services.chat
    uid = await make_user(c)
    thread = (await chat.create_thread(uid)).thread_id
    run = await make_run(c, uid, thread)
    await _write(c, run, f"before {_marker('before')}")
    result = await chat.delete_thread(uid, thread, forget_memory=True)
    assert result is not None and len(result.removed) == 1
    assert (await chat.get_run(uid, run.run_id)).cancel_requested
    late = _marker("late")
    payload = await remember(c, run, f"late {late}")
    assert (payload["status"], payload["code"]) == ("error", "unauthorized_run"), payload
    assert late not in memory_file(c, uid).read_text()


async def test_a_file_edited_outside_yuxi_into_invalid_utf8_refuses_and_keeps_the_thread(
    container: Container,
) -> None:
    c, chat = container, container.services.chat
    w = await _world(c)
    path = memory_file(c, w.uid)
    path.write_bytes(path.read_bytes() + b"- broken \xff\n")
    digest = sha256_of(path)
    with pytest.raises(MemoryConflict, match="UTF-8"):
        await chat.delete_thread(w.uid, w.thread_a, forget_memory=True)
    assert sha256_of(path) == digest
    assert (await chat.get_thread(w.uid, w.thread_a)).thread_id == w.thread_a


async def test_an_entry_older_than_the_retained_versions_is_never_forgotten(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Retention dropped the version that wrote A's entry: the oldest retained version (one of
    B's) is all the entry view can name as its source, but the entry may predate it. Deleting B
    with its memory must not take A's entry along (its writer is unknown), and B's entries that
    a retained version provably introduced go."""
    c, chat = container, container.services.chat
    monkeypatch.setattr(limits, "MEMORY_VERSIONS_KEEP", 3)
    uid = await make_user(c)
    thread_a = (await chat.create_thread(uid)).thread_id
    thread_b = (await chat.create_thread(uid)).thread_id
    old = f"old from A {_marker('a')}"
    run_a = await make_run(c, uid, thread_a)
    await _write(c, run_a, old)
    await _finish(c, run_a)
    run_b = await make_run(c, uid, thread_b)
    b_lines = [f"B {i} {_marker('b')}" for i in range(3)]
    for line in b_lines:
        await _write(c, run_b, line)
    await _finish(c, run_b)
    assert len(await _versions(c, uid)) == 3  # A's version is gone

    listed = [e.text for e in (await chat.thread_memory(uid, thread_b)).entries]
    assert old not in listed and listed == b_lines[1:]  # b_lines[0]: the oldest, unknown origin
    assert (await chat.thread_memory(uid, thread_a)).entries == []
    result = await chat.delete_thread(uid, thread_b, forget_memory=True)
    assert result is not None and result.removed == b_lines[1:]
    text = memory_file(c, uid).read_text()
    assert old in text and b_lines[0] in text
    assert all(line not in text for line in b_lines[1:])


async def test_a_deleted_threads_run_never_writes_memory_even_without_forget(
    container: Container,
) -> None:
    """The memory gate refuses a run whose thread is deleted (a plain delete does not cancel
    the run; its writes are refused all the same)."""
    c, chat = container, container.services.chat
    uid = await make_user(c)
    thread = (await chat.create_thread(uid)).thread_id
    run = await make_run(c, uid, thread)
    path = memory_file(c, uid)
    await chat.delete_thread(uid, thread)
    digest = sha256_of(path)
    late = _marker("late")
    payload = await remember(c, run, f"late {late}")
    assert (payload["status"], payload["code"]) == ("error", "unauthorized_run"), payload
    assert sha256_of(path) == digest
