"""The owner's memory: entries with their sources and lint, versions, restore, undo.

The rules (scoped to the token's user, working while memory is off, the same per-user locks as
every writer, If-Match on restore, undo only while the file is that version's result) live in
:class:`~yuxi.services.memory.version_service.MemoryVersionService`; this module speaks HTTP.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Response

from yuxi.api.deps import ServicesDep, UidDep
from yuxi.services.memory.views import (
    MemoryChangeView,
    MemoryVersionDetail,
    MemoryVersionList,
    MemoryView,
)

router = APIRouter(prefix="/api/v1/memory", tags=["memory"])


@router.get("", response_model=MemoryView)
async def get_memory(uid: UidDep, services: ServicesDep, response: Response) -> MemoryView:
    view = await services.memory_versions.view(uid)
    response.headers["ETag"] = view.etag
    return view


@router.get("/versions", response_model=MemoryVersionList)
async def list_versions(uid: UidDep, services: ServicesDep) -> MemoryVersionList:
    return await services.memory_versions.list_versions(uid)


@router.get("/versions/{version_id}", response_model=MemoryVersionDetail)
async def get_version(version_id: str, uid: UidDep, services: ServicesDep) -> MemoryVersionDetail:
    return await services.memory_versions.get_version(uid, version_id)


@router.post(
    "/versions/{version_id}/restore",
    response_model=MemoryChangeView,
    responses={412: {"description": "stale If-Match"}, 428: {"description": "no If-Match"}},
)
async def restore_version(
    version_id: str,
    uid: UidDep,
    services: ServicesDep,
    response: Response,
    if_match: Annotated[str | None, Header()] = None,
) -> MemoryChangeView:
    change = await services.memory_versions.restore(uid, version_id, if_match=if_match)
    response.headers["ETag"] = change.etag
    return change


@router.post(
    "/versions/{version_id}/undo",
    response_model=MemoryChangeView,
    responses={409: {"description": "memory changed since; the body carries the diff"}},
)
async def undo_version(
    version_id: str, uid: UidDep, services: ServicesDep, response: Response
) -> MemoryChangeView:
    change = await services.memory_versions.undo(uid, version_id)
    response.headers["ETag"] = change.etag
    return change
