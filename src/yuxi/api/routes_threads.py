"""Threads: create, list, view (with messages), archive, delete."""

from __future__ import annotations

from fastapi import APIRouter, Query

from yuxi.api.deps import ChatDep, ContainerDep, UidDep
from yuxi.api.schemas import (
    MessageView,
    ThreadCreate,
    ThreadDetail,
    ThreadList,
    ThreadView,
    ToolCallView,
)
from yuxi.db.models import Conversation, ToolCall
from yuxi.errors import NotFound
from yuxi.repositories.conversation_repository import ConversationRepository
from yuxi.utils.string_utils import truncate_utf8

router = APIRouter(prefix="/api/v1/threads", tags=["threads"])

#: A tool call's stored output is shown cut to this many UTF-8 bytes (as in ``tool_end`` events).
TOOL_RESULT_VIEW_BYTES = 4096


def thread_view(c: Conversation) -> ThreadView:
    return ThreadView(
        thread_id=c.thread_id,
        title=c.title,
        status=c.status,
        source=c.source,
        created_at=c.created_at.isoformat(),
        updated_at=c.updated_at.isoformat(),
    )


def tool_call_view(t: ToolCall) -> ToolCallView:
    result, truncated = (None, False)
    if t.output is not None:
        result, truncated = truncate_utf8(t.output, TOOL_RESULT_VIEW_BYTES)
    return ToolCallView(
        tool_call_id=t.tool_call_id,
        name=t.name,
        args=t.input,
        status=t.status,
        result=result,
        truncated=truncated,
    )


@router.post("", response_model=ThreadView, status_code=201)
async def create_thread(body: ThreadCreate, uid: UidDep, chat: ChatDep) -> ThreadView:
    return thread_view(await chat.create_thread(uid, title=body.title))


@router.get("", response_model=ThreadList)
async def list_threads(
    uid: UidDep,
    container: ContainerDep,
    include_archived: bool = False,
    limit: int = Query(default=50, ge=1, le=200),
) -> ThreadList:
    async with container.session_factory() as session:
        rows = await ConversationRepository(session).list_conversations(
            uid, include_archived=include_archived, limit=limit
        )
    return ThreadList(threads=[thread_view(c) for c in rows])


@router.get("/{thread_id}", response_model=ThreadDetail)
async def get_thread(thread_id: str, uid: UidDep, container: ContainerDep) -> ThreadDetail:
    async with container.session_factory() as session:
        repo = ConversationRepository(session)
        conversation = await repo.get_owned(uid, thread_id)
        if conversation is None or conversation.status == "deleted":
            raise NotFound("thread not found")
        messages = await repo.list_messages(conversation.id)
        tool_calls = await repo.list_tool_calls(
            [m.id for m in messages if m.message_type == "tool_call"]
        )
    return ThreadDetail(
        **thread_view(conversation).model_dump(),
        messages=[
            MessageView(
                message_id=m.id,
                role=m.role,
                message_type=m.message_type,
                content=m.content,
                run_id=m.run_id,
                created_at=m.created_at.isoformat(),
                tool_calls=[tool_call_view(t) for t in tool_calls.get(m.id, [])],
            )
            for m in messages
        ],
    )


async def _set_status(container: ContainerDep, uid: str, thread_id: str, status: str) -> None:
    async with container.session_factory() as session, session.begin():
        repo = ConversationRepository(session)
        conversation = await repo.get_owned(uid, thread_id)
        if conversation is None or conversation.status == "deleted":
            raise NotFound("thread not found")
        await repo.set_status(uid, thread_id, status)


@router.post("/{thread_id}/archive", response_model=ThreadView)
async def archive_thread(thread_id: str, uid: UidDep, container: ContainerDep) -> ThreadView:
    await _set_status(container, uid, thread_id, "archived")
    return await _view(container, uid, thread_id)


@router.post("/{thread_id}/unarchive", response_model=ThreadView)
async def unarchive_thread(thread_id: str, uid: UidDep, container: ContainerDep) -> ThreadView:
    await _set_status(container, uid, thread_id, "active")
    return await _view(container, uid, thread_id)


@router.delete("/{thread_id}", status_code=204)
async def delete_thread(thread_id: str, uid: UidDep, container: ContainerDep) -> None:
    await _set_status(container, uid, thread_id, "deleted")


async def _view(container: ContainerDep, uid: str, thread_id: str) -> ThreadView:
    async with container.session_factory() as session:
        conversation = await ConversationRepository(session).get_owned(uid, thread_id)
    if conversation is None:
        raise NotFound("thread not found")
    return thread_view(conversation)
