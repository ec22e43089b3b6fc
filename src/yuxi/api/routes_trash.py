"""The trash: the caller's deleted threads, restorable for ``YUXI_TRASH_DAYS`` (design.md
§12.3). ``DELETE /api/v1/threads/{id}`` puts a thread here; these routes list it, restore it,
or purge it at once."""

from __future__ import annotations

from fastapi import APIRouter, Query, Response

from yuxi.api.deps import ServicesDep, UidDep
from yuxi.limits import TRASH_LIST_MAX_THREADS
from yuxi.services.chat import ThreadSummary, TrashList

router = APIRouter(prefix="/api/v1/trash", tags=["threads"])


@router.get("", response_model=TrashList)
async def list_trash(
    uid: UidDep,
    services: ServicesDep,
    limit: int = Query(default=TRASH_LIST_MAX_THREADS, ge=0, le=TRASH_LIST_MAX_THREADS),
) -> TrashList:
    """The caller's deleted threads, newest deletion first, each with ``deleted_at``,
    ``purge_after`` and whether its deletion forgot the memory it wrote (not restored).
    ``limit=0``: only ``trash_days`` (what the delete dialog says)."""
    return await services.chat.trash.list_threads(uid, limit=limit)


@router.post("/{thread_id}/restore", response_model=ThreadSummary)
async def restore_thread(thread_id: str, uid: UidDep, services: ServicesDep) -> ThreadSummary:
    """The thread is active again with its messages, tool calls and runs; memory entries a
    deletion forgot stay forgotten (undo that ``forget`` version in the memory panel)."""
    return await services.chat.trash.restore(uid, thread_id)


@router.delete("/{thread_id}", status_code=204, response_model=None)
async def delete_now(thread_id: str, uid: UidDep, services: ServicesDep) -> Response:
    """Purge the thread from the trash now (everything of it, for good). ``409`` while a run
    of it is still stopping: nothing was removed."""
    await services.chat.trash.delete_now(uid, thread_id)
    return Response(status_code=204)
