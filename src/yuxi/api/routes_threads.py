"""Threads: create, list, view (with messages), archive, delete."""

from __future__ import annotations

from fastapi import APIRouter, Query

from yuxi.api.deps import ServicesDep, UidDep
from yuxi.api.schemas import (
    MessageView,
    ThreadCreate,
    ThreadDetail,
    ThreadList,
    ThreadView,
    ToolCallView,
)
from yuxi.services.chat_service import ThreadSummary, ToolCallSummary

router = APIRouter(prefix="/api/v1/threads", tags=["threads"])


def thread_view(c: ThreadSummary) -> ThreadView:
    return ThreadView(
        thread_id=c.thread_id,
        title=c.title,
        status=c.status,
        source=c.source,
        created_at=c.created_at.isoformat(),
        updated_at=c.updated_at.isoformat(),
    )


def tool_call_view(t: ToolCallSummary) -> ToolCallView:
    return ToolCallView(
        tool_call_id=t.tool_call_id,
        name=t.name,
        args=t.args,
        status=t.status,
        result=t.result,
        truncated=t.truncated,
    )


@router.post("", response_model=ThreadView, status_code=201)
async def create_thread(body: ThreadCreate, uid: UidDep, services: ServicesDep) -> ThreadView:
    return thread_view(await services.chat.create_thread(uid, title=body.title))


@router.get("", response_model=ThreadList)
async def list_threads(
    uid: UidDep,
    services: ServicesDep,
    include_archived: bool = False,
    limit: int = Query(default=50, ge=1, le=200),
) -> ThreadList:
    rows = await services.chat.list_threads(uid, include_archived=include_archived, limit=limit)
    return ThreadList(threads=[thread_view(c) for c in rows])


@router.get("/{thread_id}", response_model=ThreadDetail)
async def get_thread(thread_id: str, uid: UidDep, services: ServicesDep) -> ThreadDetail:
    thread = await services.chat.get_thread(uid, thread_id)
    return ThreadDetail(
        **thread_view(thread.thread).model_dump(),
        messages=[
            MessageView(
                message_id=m.id,
                role=m.role,
                message_type=m.message_type,
                content=m.content,
                run_id=m.run_id,
                created_at=m.created_at.isoformat(),
                tool_calls=[tool_call_view(t) for t in thread.tool_calls.get(m.id, [])],
            )
            for m in thread.messages
        ],
    )


@router.post("/{thread_id}/archive", response_model=ThreadView)
async def archive_thread(thread_id: str, uid: UidDep, services: ServicesDep) -> ThreadView:
    return thread_view(await services.chat.archive_thread(uid, thread_id))


@router.post("/{thread_id}/unarchive", response_model=ThreadView)
async def unarchive_thread(thread_id: str, uid: UidDep, services: ServicesDep) -> ThreadView:
    return thread_view(await services.chat.unarchive_thread(uid, thread_id))


@router.delete("/{thread_id}", status_code=204)
async def delete_thread(thread_id: str, uid: UidDep, services: ServicesDep) -> None:
    await services.chat.delete_thread(uid, thread_id)
