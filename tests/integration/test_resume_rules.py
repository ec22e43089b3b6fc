"""A decision on an interrupted run resumes only an active thread (issue 10 §8)."""

from __future__ import annotations

import pytest

from tests.support.factories import interrupted_run, make_user
from yuxi.bootstrap import Container
from yuxi.errors import Conflict, NotFound
from yuxi.runtime.worker import Worker


async def test_an_archived_threads_interrupted_run_cannot_be_resumed(
    container: Container, worker: Worker
) -> None:
    uid = await make_user(container)
    chat = container.services.chat
    thread, run_id = await interrupted_run(container, worker, uid)
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
    thread, run_id = await interrupted_run(container, worker, uid)
    await chat.delete_thread(uid, thread)
    with pytest.raises(NotFound):
        await chat.resume(uid, run_id, "approve")
