"""Threads: create, list, view (with messages), rename / hide from recall, archive, delete."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query, Request

from yuxi.api.deps import ServicesDep, UidDep
from yuxi.api.schemas import ThreadCreate, ThreadList, ThreadPatch
from yuxi.errors import InvalidArgument
from yuxi.services.chat.views import ThreadDetail, ThreadSummary

router = APIRouter(prefix="/api/v1/threads", tags=["threads"])


@router.post("", response_model=ThreadSummary, status_code=201)
async def create_thread(
    request: Request,
    uid: UidDep,
    services: ServicesDep,
    body: Annotated[ThreadCreate | None, Body()] = None,
) -> ThreadSummary:
    """A new chat thread; the body (``{"title"?}``) may be left out: a bare POST is ``{}``.
    Anything sent must still be an object (a JSON ``null`` is refused, not taken as none)."""
    if body is None and (await request.body()).strip():
        raise InvalidArgument("the body must be a JSON object such as {} (or left out)")
    return await services.chat.create_thread(uid, title=(body or ThreadCreate()).title)


@router.get("", response_model=ThreadList)
async def list_threads(
    uid: UidDep,
    services: ServicesDep,
    include_archived: bool = False,
    limit: int = Query(default=50, ge=1, le=200),
) -> ThreadList:
    rows = await services.chat.list_threads(uid, include_archived=include_archived, limit=limit)
    return ThreadList(threads=rows)


@router.get("/{thread_id}", response_model=ThreadDetail)
async def get_thread(thread_id: str, uid: UidDep, services: ServicesDep) -> ThreadDetail:
    """The thread and its latest messages; each tool-calling message carries its tool calls."""
    return await services.chat.get_thread(uid, thread_id)


@router.patch("/{thread_id}", response_model=ThreadSummary)
async def update_thread(
    thread_id: str, body: ThreadPatch, uid: UidDep, services: ServicesDep
) -> ThreadSummary:
    """Rename the thread and/or hide it from the history tools (``recall_excluded``)."""
    return await services.chat.update_thread(
        uid, thread_id, title=body.title, recall_excluded=body.recall_excluded
    )


@router.post("/{thread_id}/archive", response_model=ThreadSummary)
async def archive_thread(thread_id: str, uid: UidDep, services: ServicesDep) -> ThreadSummary:
    return await services.chat.archive_thread(uid, thread_id)


@router.post("/{thread_id}/unarchive", response_model=ThreadSummary)
async def unarchive_thread(thread_id: str, uid: UidDep, services: ServicesDep) -> ThreadSummary:
    return await services.chat.unarchive_thread(uid, thread_id)


@router.delete("/{thread_id}", status_code=204)
async def delete_thread(thread_id: str, uid: UidDep, services: ServicesDep) -> None:
    await services.chat.delete_thread(uid, thread_id)
