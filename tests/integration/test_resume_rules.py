"""A decision on an interrupted run resumes only an active thread (issue 10 §8)."""

from __future__ import annotations

import pytest

from tests.support.factories import make_user
from yuxi.bootstrap import Container
from yuxi.errors import Conflict, NotFound
from yuxi.runtime.worker import Worker


async def _interrupted(container: Container, worker: Worker, uid: str) -> tuple[str, str]:
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "write file notes/a.md: hello")
    assert await worker.run_once()
    assert (await chat.get_run(uid, run.id)).status == "interrupted"
    return thread, run.id


async def test_an_archived_threads_interrupted_run_cannot_be_resumed(
    container: Container, worker: Worker
) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    thread, run_id = await _interrupted(container, worker, uid)
    await chat.archive_thread(uid, thread)
    with pytest.raises(Conflict, match="archived"):
        await chat.resume(uid, run_id, "approve")
    await chat.unarchive_thread(uid, thread)
    resumed, created = await chat.resume(uid, run_id, "approve")
    assert created and resumed.run_type == "resume"


async def test_a_deleted_threads_interrupted_run_cannot_be_resumed(
    container: Container, worker: Worker
) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    thread, run_id = await _interrupted(container, worker, uid)
    await chat.delete_thread(uid, thread)
    with pytest.raises(NotFound):
        await chat.resume(uid, run_id, "approve")
