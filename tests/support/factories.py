"""Small builders for integration tests: users, threads and runs in known states."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, text

from yuxi.agents.tools.tool_result import ToolPayload, tool_outcome
from yuxi.bootstrap import Container
from yuxi.db.models import Conversation
from yuxi.identity import RunIdentity
from yuxi.repositories.runs.agent_run_repository import AgentRunRepository
from yuxi.repositories.user_repository import UserRepository
from yuxi.services.memory.service import MemoryWriteResult

if TYPE_CHECKING:  # the runtime is heavy to import, and the writer subprocesses need none of it
    from yuxi.runtime.worker import Worker


def as_kwargs(run: RunIdentity) -> dict[str, str | None]:
    """The five identity values as keyword arguments (override one to forge an identity)."""
    return {
        "uid": run.uid,
        "thread_id": run.thread_id,
        "run_id": run.run_id,
        "request_id": run.request_id,
        "worker_id": run.worker_id,
    }


async def remember(
    c: Container,
    identity: RunIdentity | Mapping[str, object],
    content: object,
    replaces: object = None,
) -> dict[str, Any]:
    """``remember_memory`` through the tool adapter: the payload the model would see.

    ``identity`` may be the five values as a mapping (possibly forged): building the
    :class:`RunIdentity` is then part of the call, so an invalid value is ``unauthorized_run``.
    """

    async def call() -> MemoryWriteResult:
        ident = identity if isinstance(identity, RunIdentity) else RunIdentity(**identity)  # type: ignore[arg-type]
        return await c.services.memory.remember_memory(ident, content, replaces)

    payload, _ = await tool_outcome(call)
    return payload


async def tool_payload(call: Callable[[], Awaitable[ToolPayload]]) -> dict[str, Any]:
    """The model-facing payload of any service call a tool makes (errors included)."""
    payload, _ = await tool_outcome(call)
    return payload


async def make_user(c: Container, *, memory: bool = True, name: str = "tester") -> str:
    async with c.session_factory() as s, s.begin():
        repo = UserRepository(s)
        user = await repo.create_user(name)
        await repo.set_memory_enabled(user.uid, memory)
    await c.workspace(user.uid).ensure_user_workspace()
    return user.uid


async def set_memory(c: Container, uid: str, enabled: bool) -> None:
    async with c.session_factory() as s, s.begin():
        await UserRepository(s).set_memory_enabled(uid, enabled)


async def make_thread(
    c: Container, uid: str, *, source: str = "chat", status: str = "active", title: str = "t"
) -> str:
    thread_id = uuid.uuid4().hex
    async with c.session_factory() as s, s.begin():
        deleted_at = func.now() if status == "deleted" else None  # in the trash since now
        s.add(
            Conversation(
                thread_id=thread_id,
                uid=uid,
                title=title,
                source=source,
                status=status,
                deleted_at=deleted_at,
            )
        )
    return thread_id


async def make_run(
    c: Container,
    uid: str,
    thread_id: str | None = None,
    *,
    run_type: str = "chat",
    claim: bool = True,
    lease_seconds: float = 60,
) -> RunIdentity:
    """A run on a (new) thread; claimed by a fresh worker unless ``claim=False``."""
    thread_id = thread_id or await make_thread(c, uid)
    request_id = uuid.uuid4().hex
    async with c.session_factory() as s, s.begin():
        repo = AgentRunRepository(s)
        run, _ = await repo.create_run(
            uid=uid, thread_id=thread_id, request_id=request_id, run_type=run_type
        )
        worker_id: str | None = None
        if claim:
            claimed = await repo.claim(run.id, lease_seconds=lease_seconds)
            assert claimed is not None and claimed.worker_id
            worker_id = claimed.worker_id
    return RunIdentity(uid, thread_id, run.id, request_id, worker_id)


async def sql(c: Container, statement: str, **params: object) -> None:
    async with c.session_factory() as s, s.begin():
        await s.execute(text(statement), params)


def memory_file(c: Container, uid: str) -> Path:
    return c.workspace(uid).directory / "agents" / "MEMORY.md"


def sha256_of(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


async def make_asked_run(
    c: Container, uid: str, text: str = "please remember this", *, title: str = ""
) -> tuple[RunIdentity, int]:
    """A claimed chat run on a new thread, submitted like a real message: returns its identity
    and the id of the user message that asked for it."""
    chat = c.services.chat
    thread_id = (await chat.create_thread(uid, title=title)).thread_id
    run, _ = await chat.submit(uid, thread_id, text)
    claimed = await c.services.runs.claim(run.id)
    assert claimed is not None
    (message,) = (await chat.get_thread(uid, thread_id)).messages
    assert message.role == "user"
    return claimed.identity, message.message_id


async def chat_once(c: Container, worker: Any, uid: str, thread_id: str, text: str) -> Any:
    """Submit ``text`` to the thread, let ``worker`` execute that one run, return the run row."""
    run, _ = await c.services.chat.submit(uid, thread_id, text)
    assert await worker.run_once()
    return await c.services.chat.get_run(uid, run.id)


async def interrupted_run(container: Container, worker: Worker, uid: str) -> tuple[str, str]:
    """A new thread of ``uid`` whose chat run asked to write a file and waits for approval:
    ``(thread_id, run_id)``."""
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "write file notes/a.md: hello")
    assert await worker.run_once()
    assert (await chat.get_run(uid, run.id)).status == "interrupted"
    return thread, run.id
