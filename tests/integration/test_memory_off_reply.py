"""With memory off, "what do you remember?" says memory is off (and points to the switch) even
when MEMORY.md is full, and nothing of the file reaches the reply."""

from __future__ import annotations

import uuid

from tests.support.factories import chat_once, make_user, memory_file, set_memory
from yuxi.bootstrap import Container
from yuxi.runtime.worker import Worker


async def test_memory_off_says_off_not_empty(container: Container, worker: Worker) -> None:
    uid = await make_user(container)
    marker = f"OFFMARK-{uuid.uuid4().hex}"
    thread = (await container.services.chat.create_thread(uid)).thread_id
    on = await chat_once(container, worker, uid, thread, f"remember: {marker}")
    assert on.status == "completed" and marker in memory_file(container, uid).read_text()

    await set_memory(container, uid, False)
    for question in ("what do you remember?", "你记得什么？"):
        run = await chat_once(container, worker, uid, thread, question)
        reply = str((run.output or {}).get("reply", ""))
        assert run.status == "completed", run
        assert ("memory is off" in reply) or ("长期记忆已关闭" in reply), reply
        assert "no saved memory" not in reply and "没有保存" not in reply
        assert marker not in reply
