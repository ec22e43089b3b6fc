"""Threads: create, list, view (with messages), rename / hide from recall, archive, delete
(optionally with the memory entries the thread wrote), and those entries."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse

from yuxi.api.deps import ServicesDep, UidDep
from yuxi.api.schemas import ThreadCreate, ThreadList, ThreadPatch
from yuxi.errors import InvalidArgument
from yuxi.services.chat.views import ThreadDetail, ThreadSummary
from yuxi.services.memory import ThreadForgetView, ThreadMemoryView

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


@router.get("/{thread_id}/memory", response_model=ThreadMemoryView)
async def thread_memory(thread_id: str, uid: UidDep, services: ServicesDep) -> ThreadMemoryView:
    """The entries of the current MEMORY.md this thread wrote (their source is one of its
    runs): what ``DELETE …?forget_memory=true`` would remove."""
    return await services.chat.thread_memory(uid, thread_id)


@router.delete(
    "/{thread_id}",
    status_code=204,
    response_model=None,
    responses={200: {"model": ThreadForgetView, "description": "deleted with its memory"}},
)
async def delete_thread(
    thread_id: str, uid: UidDep, services: ServicesDep, forget_memory: bool = False
) -> Response | ThreadForgetView:
    """Delete the thread: ``204`` and MEMORY.md untouched; with ``forget_memory=true``, ``200``
    and what was removed (entry texts, the ``forget`` version, the new ETag), in the same
    transaction as the deletion. Archiving never forgets."""
    forgotten = await services.chat.delete_thread(uid, thread_id, forget_memory=forget_memory)
    if forgotten is None:
        return Response(status_code=204)
    return JSONResponse(jsonable_encoder(forgotten), status_code=200)
