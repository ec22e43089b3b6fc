"""The owner's memory: entries with their sources and lint, versions, restore, undo, export and
import.

The rules (scoped to the token's user, working while memory is off, the same per-user locks as
every writer, If-Match on restore and import, undo only while the file is that version's result,
an import checked whole before anything is locked) live in
:class:`~yuxi.services.memory.version_service.MemoryVersionService`; this module speaks HTTP and
bounds a request body while it streams in (docs/design.md §10.5).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Request, Response

from yuxi.api.bodies import read_bounded_body
from yuxi.api.deps import ServicesDep, UidDep
from yuxi.errors import FileTooLarge
from yuxi.limits import MEMORY_FILE_MAX_BYTES, MEMORY_IMPORT_DOCUMENT_MAX_BYTES
from yuxi.services.memory import (
    MemoryExport,
    MemoryImportPreview,
    MemoryImportResult,
    encode_export,
)
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


@router.get(
    "/export",
    response_model=MemoryExport,
    responses={200: {"content": {"text/markdown": {}}, "description": "the document or the file"}},
)
async def export_memory(
    uid: UidDep, services: ServicesDep, format: Literal["json", "markdown"] = "json"
) -> Any:
    """The export document (``format=json``, the default) or MEMORY.md itself (``markdown``)."""
    if format == "markdown":
        data, etag = await services.memory_versions.export_markdown(uid)
        return Response(
            content=data,
            media_type="text/markdown; charset=utf-8",
            headers={"ETag": etag, "Content-Disposition": 'attachment; filename="MEMORY.md"'},
        )
    doc = await services.memory_versions.export(uid)
    body = await asyncio.to_thread(encode_export, doc)
    return Response(
        content=body,
        media_type="application/json",
        headers={
            "ETag": doc.etag,
            "Content-Disposition": 'attachment; filename="memory-export.json"',
        },
    )


_IMPORT_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "text/markdown": {"schema": {"type": "string"}},
            "text/plain": {"schema": {"type": "string"}},
            "application/json": {"schema": {"type": "object"}},
        },
    }
}


@router.post(
    "/import",
    response_model=MemoryImportPreview | MemoryImportResult,
    openapi_extra=_IMPORT_BODY,
    responses={
        400: {"description": "invalid_import: not UTF-8, a NUL byte, not JSON"},
        412: {"description": "stale If-Match"},
        413: {"description": "over the MEMORY.md limit"},
        415: {"description": "not Markdown, plain text or JSON"},
        422: {"description": "unsupported_import_format: JSON that is not our export document"},
        428: {"description": "no If-Match (an apply)"},
    },
)
async def import_memory(
    request: Request,
    uid: UidDep,
    services: ServicesDep,
    response: Response,
    dry_run: bool = False,
    mode: Literal["replace", "append"] = "replace",
    if_match: Annotated[str | None, Header()] = None,
) -> MemoryImportPreview | MemoryImportResult:
    media_type = request.headers.get("content-type")
    json_body = (media_type or "").split(";")[0].strip().lower() == "application/json"
    limit = MEMORY_IMPORT_DOCUMENT_MAX_BYTES if json_body else MEMORY_FILE_MAX_BYTES
    body = await read_bounded_body(request, limit, _import_too_large(limit))
    result = await services.memory_versions.import_memory(
        uid, body, media_type, dry_run=dry_run, if_match=if_match, mode=mode
    )
    if isinstance(result, MemoryImportResult):
        response.headers["ETag"] = result.etag
    return result


def _import_too_large(limit: int) -> Callable[[], FileTooLarge]:
    what = "an export document" if limit != MEMORY_FILE_MAX_BYTES else "MEMORY.md"
    message = f"{what} may be at most {limit} bytes (UTF-8) to import; nothing was written"
    return lambda: FileTooLarge(message)
