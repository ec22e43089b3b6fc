"""Threads: create, list, view (with messages), archive, delete."""

from __future__ import annotations

from fastapi import APIRouter, Query

from yuxi.api.deps import ChatDep, ContainerDep, UidDep
from yuxi.api.schemas import MessageView, ThreadCreate, ThreadDetail, ThreadList, ThreadView
from yuxi.db.models import Conversation
from yuxi.errors import NotFound
from yuxi.repositories.conversation_repository import ConversationRepository

router = APIRouter(prefix="/api/v1/threads", tags=["threads"])


def thread_view(c: Conversation) -> ThreadView:
    return ThreadView(
        thread_id=c.thread_id,
        title=c.title,
        status=c.status,
        source=c.source,
        created_at=c.created_at.isoformat(),
        updated_at=c.updated_at.isoformat(),
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
