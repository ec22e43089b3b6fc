"""Setting up and measuring history for the lookback tests: a transaction on the container's
session factory (states the product cannot reach directly), a user with memory on, and the
byte sizes the tools' budgets are counted in."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.bootstrap import Container
from yuxi.db.models import Conversation, ToolCall, User, UserConfig
from yuxi.repositories.thread_repository import ThreadRepository
from yuxi.utils.json_utils import compact_json

__all__ = ["add_tool_call", "new_thread", "seed_user", "size", "text_size", "tx"]


@asynccontextmanager
async def tx(container: Container) -> AsyncIterator[AsyncSession]:
    async with container.session_factory() as session, session.begin():
        yield session


async def seed_user(container: Container, uid: str | None = None) -> str:
    """A new user (``uid`` or a random one) with memory on."""
    uid = uid or f"u_{uuid.uuid4().hex[:12]}"
    async with tx(container) as s:
        s.add(User(uid=uid, name=uid))
        await s.flush()
        s.add(UserConfig(uid=uid, enable_memory=True))
    return uid


async def add_tool_call(
    session: AsyncSession,
    message_id: int,
    *,
    tool_call_id: str,
    name: str,
    input: Any,
    output: str | None = None,
    status: str = "pending",
    error: str | None = None,
) -> int:
    """A ToolCall row on ``message_id``, as a run's step writes one; its primary key. (A run
    writes its calls only in its step's one statement, ``yuxi.repositories.runs._step``.)"""
    values = {
        "message_id": message_id,
        "tool_call_id": tool_call_id,
        "name": name,
        "input": input,
        "output": output,
        "status": status,
        "error": error,
    }
    inserted = await session.execute(insert(ToolCall).values(**values).returning(ToolCall.id))
    return int(inserted.scalar_one())


def size(obj: Any) -> int:
    """UTF-8 bytes of ``obj`` as compact JSON (how every budget is counted)."""
    return len(compact_json(obj).encode("utf-8"))


def text_size(value: str) -> int:
    """Bytes of a string inside the compact JSON (escapes counted, quotes not)."""
    return size(value) - 2


async def new_thread(
    container: Container,
    uid: str,
    contents: list[str],
    *,
    title: str = "",
    source: str = "chat",
    status: str = "active",
) -> tuple[Conversation, list[int]]:
    """A thread of ``uid`` with ``contents`` as alternating user/assistant messages (then
    ``status`` set); the thread and the message ids."""
    async with tx(container) as s:
        repo = ThreadRepository(s)
        conv = await repo.create_conversation(uid, title=title, source=source)
        ids = []
        for i, content in enumerate(contents):
            msg = await repo.add_message(
                conv, role="user" if i % 2 == 0 else "assistant", content=content
            )
            ids.append(msg.id)
        if status != "active":
            await repo.set_status(uid, conv.thread_id, status)
    return conv, ids
