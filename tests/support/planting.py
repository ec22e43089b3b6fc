"""Planting unique markers everywhere a user (or one thread of theirs) can write, with real
runs of the offline model, for the tests that prove a deletion leaves nothing behind: the
account deletion (``tests/integration/test_account_deletion.py``) and the trash's purge
(``tests/integration/test_trash_purge_scan.py``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from tests.support.factories import sql
from yuxi.bootstrap import Container
from yuxi.runtime.worker import Worker
from yuxi.workspace import workspace_dirname

#: Which columns refer to what: a row holding one of the ids named is attributed to their owner.
ATTRIBUTION = {
    "uid": "uid",
    "thread_id": "thread_id",
    "conversation_thread_id": "thread_id",
    "run_id": "run_id",
    "created_by_run_id": "run_id",
    "message_id": "message_id",
    "conversation_id": "conversation_id",
    "parent_conversation_id": "conversation_id",
    "child_conversation_id": "conversation_id",
}
OWN_ID = {"conversations": "conversation_id", "messages": "message_id", "agent_runs": "run_id"}


def owned_by(table: str, row: dict[str, Any], ids: dict[str, set[Any]]) -> bool:
    """Whether a row (as ``dump_tables`` gives it) belongs to what ``ids`` names: by its own id
    (a thread, message or run) or by a column that refers to one (:data:`ATTRIBUTION`)."""
    if table in OWN_ID and row.get("id") in ids[OWN_ID[table]]:
        return True
    return any(row.get(key) in ids[kind] for key, kind in ATTRIBUTION.items() if key in row)


class Planted:
    def __init__(self, uid: str, token: str, marker: str) -> None:
        self.uid = uid
        self.token = token
        self.marker = marker
        self.threads: list[str] = []

    @property
    def needles(self) -> list[str]:
        """What must not remain: the markers, the uid, and any stretch of it the workspace's
        directory name carries."""
        return [self.marker, self.uid, self.uid[2:], self.uid[:14], workspace_dirname(self.uid)]


@dataclass
class PlantedThread:
    """A thread written through every path a thread has: ``marker`` is in its title, its
    messages, a tool call's input and output, its events, a run's error, a SubAgent's thread
    and the checkpoints; ``memory_marker`` is what it asked to remember (so it is in MEMORY.md
    and the memory versions too); ``file_marker`` names a file it wrote after an approval (so
    it is in the workspace too)."""

    thread_id: str
    marker: str
    memory_marker: str
    file_marker: str
    run_ids: list[str] = field(default_factory=list)


async def run_in(c: Container, worker: Worker, uid: str, thread: str, text: str) -> Any:
    """Post ``text`` to ``thread`` and let ``worker`` execute the run; the run settled."""
    run, _ = await c.services.chat.submit(uid, thread, text)
    assert await worker.run_once()
    return await c.services.chat.get_run(uid, run.id)


async def plant_thread(
    c: Container, worker: Worker, uid: str, marker: str, *, title: str | None = None
) -> PlantedThread:
    """A thread of ``uid`` with ``marker`` in everything it holds (and a memory and a file
    marker, :class:`PlantedThread`); the user's memory switch must be on."""
    chat = c.services.chat
    thread = (await chat.create_thread(uid, title=title or f"{marker}title")).thread_id
    # Markers of their own (neither holds the other): what stays in memory and in the
    # workspace must not be mistaken for the thread's.
    planted = PlantedThread(
        thread, marker, f"qzxmem{uuid.uuid4().hex[:12]}", f"qzxfile{uuid.uuid4().hex[:12]}"
    )
    done = await run_in(c, worker, uid, thread, f"remember: I drink {planted.memory_marker}tea")
    assert done.status == "completed", done.error_message
    planted.run_ids.append(done.id)
    await sql(
        c, "UPDATE agent_runs SET error_message = :m WHERE id = :id", m=f"{marker}err", id=done.id
    )
    path = f"notes/{planted.file_marker}.md"
    asked = await run_in(c, worker, uid, thread, f"write file {path}: {planted.file_marker}")
    assert asked.status == "interrupted", asked.error_message
    resume, _ = await chat.resume(uid, asked.id, "approve")
    assert await worker.run_once()
    assert (await chat.get_run(uid, resume.id)).status == "completed"
    searched = await run_in(c, worker, uid, thread, f"search history: {marker}search")
    delegated = await run_in(c, worker, uid, thread, f"delegate: summarize {marker}task")
    assert delegated.status == "completed", delegated.error_message
    planted.run_ids += [asked.id, resume.id, searched.id, delegated.id]
    return planted


async def plant(c: Container, worker: Worker, role: str) -> Planted:
    """A user with a marker in everything they can write."""
    marker = f"qzx{role}{uuid.uuid4().hex[:10]}"
    created = await c.services.users.create_user(f"{role} {marker}name")
    p = Planted(created.uid, created.token, marker)
    users, chat = c.services.users, c.services.chat
    await users.set_memory_enabled(p.uid, True)
    await users.issue_login_code(p.uid)
    await users.create_token(p.uid, label=f"{marker}label")

    thread = (await chat.create_thread(p.uid, title=f"{marker}title")).thread_id
    p.threads.append(thread)
    done = await run_in(c, worker, p.uid, thread, f"remember: I drink {marker}tea every day")
    assert done.status == "completed", done.error_message
    await sql(
        c, "UPDATE agent_runs SET error_message = :m WHERE id = :id", m=f"{marker}err", id=done.id
    )

    asked = await run_in(c, worker, p.uid, thread, f"write file notes/{marker}.md: {marker}file")
    assert asked.status == "interrupted", asked.error_message
    resume, _ = await chat.resume(p.uid, asked.id, "approve")
    assert await worker.run_once()
    assert (await chat.get_run(p.uid, resume.id)).status == "completed"

    delegated = await run_in(c, worker, p.uid, thread, f"delegate: summarize {marker}task")
    assert delegated.status == "completed", delegated.error_message

    other = (await chat.create_thread(p.uid)).thread_id
    p.threads.append(other)
    await c.services.files.write_file(
        p.uid, f"docs/{marker}.txt", f"{marker}doc 笔记".encode(), if_none_match="*"
    )
    return p
