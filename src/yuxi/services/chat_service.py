"""Chat requests become runs: the user message and a pending AgentRun, in one transaction.

Workers (``yuxi.runtime.worker``) claim and execute the runs; this service only accepts work,
answers questions about it and turns approval decisions into ``resume`` runs.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from yuxi.db.models import AgentRun, Conversation, RunEvent
from yuxi.errors import Conflict, InvalidArgument, NotFound
from yuxi.repositories.agent_run_repository import AgentRunRepository
from yuxi.repositories.conversation_repository import ConversationRepository
from yuxi.repositories.run_event_repository import RunEventRepository

INPUT_MAX_BYTES = 32 * 1024
REQUEST_ID_MAX_CHARS = 128
DECISIONS = ("approve", "reject")


def _check_input(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidArgument("input must be a string")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidArgument("input is not valid Unicode (lone surrogate)") from None
    if "\x00" in text:
        raise InvalidArgument("input must not contain NUL characters")
    if not text.strip():
        raise InvalidArgument("input must not be blank")
    if size > INPUT_MAX_BYTES:
        raise InvalidArgument(f"input is {size} UTF-8 bytes; the limit is {INPUT_MAX_BYTES}")
    return text


def _check_request_id(request_id: object) -> str:
    if request_id is None:
        return uuid.uuid4().hex
    if (
        not isinstance(request_id, str)
        or not request_id.strip()
        or len(request_id) > REQUEST_ID_MAX_CHARS
        or not request_id.isprintable()
        or not request_id.isascii()
    ):
        raise InvalidArgument(
            f"request_id must be 1..{REQUEST_ID_MAX_CHARS} printable ASCII characters"
        )
    return request_id


class ChatService:
    def __init__(self, session_factory: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = session_factory

    async def create_thread(
        self, uid: str, *, title: str = "", source: str = "chat"
    ) -> Conversation:
        async with self._sessions() as session, session.begin():
            return await ConversationRepository(session).create_conversation(
                uid, title=title[:200], source=source
            )

    async def submit(
        self, uid: str, thread_id: str, text: object, *, request_id: object = None
    ) -> tuple[AgentRun, bool]:
        """Persist the user message and a pending chat run. Idempotent on ``request_id``."""
        body = _check_input(text)
        rid = _check_request_id(request_id)
        async with self._sessions() as session, session.begin():
            conversations = ConversationRepository(session)
            conversation = await conversations.get_owned(uid, thread_id)
            if conversation is None or conversation.status == "deleted":
                raise NotFound("thread not found")
            if conversation.status != "active":
                raise Conflict("thread is archived; unarchive it to continue")
            runs = AgentRunRepository(session)
            existing = await runs.get_by_request(uid, rid)
            if existing is not None:
                if existing.conversation_thread_id != thread_id:
                    raise Conflict("request_id was already used for another thread")
                return existing, False
            if await runs.awaiting_approval(thread_id):
                raise Conflict("this thread is waiting for an approval decision")
            run, created = await runs.create_run(
                uid=uid,
                thread_id=thread_id,
                request_id=rid,
                run_type="chat",
                input_payload={"input": body},
            )
            if created:
                if not conversation.title:
                    conversation.title = body.strip().splitlines()[0][:80]
                await conversations.add_message(
                    conversation, role="user", content=body, run_id=run.id
                )
                await RunEventRepository(session).append(
                    run.id, "run_status", {"status": "pending"}
                )
            return run, created

    async def submit_agent_call(
        self, uid: str, text: object, *, source: str = "agent_call", request_id: object = None
    ) -> tuple[AgentRun, bool]:
        """A one-shot run in a new ``agent_call`` (or ``agent_evaluation``) thread."""
        if source not in ("agent_call", "agent_evaluation"):
            raise InvalidArgument("source must be agent_call or agent_evaluation")
        _check_input(text)
        rid = _check_request_id(request_id)
        async with self._sessions() as session:
            existing = await AgentRunRepository(session).get_by_request(uid, rid)
        if existing is not None:
            return existing, False
        thread = await self.create_thread(uid, source=source)
        return await self.submit(uid, thread.thread_id, text, request_id=rid)

    async def resume(self, uid: str, run_id: str, decision: object) -> tuple[AgentRun, bool]:
        """Turn an approve/reject decision on an interrupted run into a ``resume`` run."""
        if decision not in DECISIONS:
            raise InvalidArgument("decision must be 'approve' or 'reject'")
        async with self._sessions() as session, session.begin():
            runs = AgentRunRepository(session)
            interrupted = await runs.get_owned(uid, run_id)
            if interrupted is None:
                raise NotFound("run not found")
            # One decision per interruption: the request id is derived from the run.
            request_id = f"resume:{run_id}"
            existing = await runs.get_by_request(uid, request_id)
            if existing is not None:
                return existing, False
            if interrupted.status != "interrupted":
                raise Conflict(f"run is {interrupted.status}, not waiting for approval")
            run, created = await runs.create_run(
                uid=uid,
                thread_id=interrupted.conversation_thread_id,
                request_id=request_id,
                run_type="resume",
                input_payload={"decision": decision},
                created_by_run_id=run_id,
            )
            if created:
                await RunEventRepository(session).append(
                    run.id, "run_status", {"status": "pending"}
                )
            return run, created

    async def cancel(self, uid: str, run_id: str) -> AgentRun:
        async with self._sessions() as session, session.begin():
            runs = AgentRunRepository(session)
            run = await runs.get_owned(uid, run_id)
            if run is None:
                raise NotFound("run not found")
            if run.status == "pending":
                await runs.cancel_pending(run_id)
                await RunEventRepository(session).append(
                    run_id, "run_status", {"status": "cancelled"}
                )
            elif run.status == "running":
                await runs.request_cancel(uid, run_id)
            refreshed = await runs.get(run_id)
            assert refreshed is not None
            return refreshed

    async def get_run(self, uid: str, run_id: str) -> AgentRun:
        async with self._sessions() as session:
            run = await AgentRunRepository(session).get_owned(uid, run_id)
        if run is None:
            raise NotFound("run not found")
        return run

    async def events_after(
        self, uid: str, run_id: str, after_seq: int = 0, limit: int = 500
    ) -> list[RunEvent]:
        async with self._sessions() as session:
            if await AgentRunRepository(session).get_owned(uid, run_id) is None:
                raise NotFound("run not found")
            return await RunEventRepository(session).list_after(run_id, after_seq, limit)

    async def thread_runs(self, uid: str, thread_id: str) -> list[AgentRun]:
        """The user's runs on one thread, oldest first; another user's thread is NotFound."""
        async with self._sessions() as session:
            conversation = await ConversationRepository(session).get_owned(uid, thread_id)
            if conversation is None or conversation.status == "deleted":
                raise NotFound("thread not found")
            rows = await session.execute(
                select(AgentRun)
                .where(AgentRun.uid == uid, AgentRun.conversation_thread_id == thread_id)
                .order_by(AgentRun.created_at)
            )
            return list(rows.scalars())


def run_view(run: AgentRun) -> dict[str, Any]:
    """The public shape of a run (API and CLI)."""
    return {
        "run_id": run.id,
        "thread_id": run.conversation_thread_id,
        "request_id": run.request_id,
        "run_type": run.run_type,
        "status": run.status,
        "cancel_requested": run.cancel_requested,
        "created_by_run_id": run.created_by_run_id,
        "created_at": run.created_at.isoformat() if run.created_at else None,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "error": None
        if run.error_code is None
        else {"code": run.error_code, "message": run.error_message},
        "output": run.output,
        "memory_snapshot": None
        if run.memory_snapshot_sha256 is None
        else {"sha256": run.memory_snapshot_sha256, "size": run.memory_snapshot_bytes},
    }
