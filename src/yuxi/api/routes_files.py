"""The workspace file API, with strong ETags and ``If-Match``.

The rules (MEMORY.md through the memory service's same-lock writer, a stale ``If-Match``
refused with 412, UTF-8 text only) live in
:class:`~yuxi.services.workspace_file_service.WorkspaceFileService`; this module speaks HTTP.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Request, Response

from yuxi.api.bodies import read_bounded_body
from yuxi.api.deps import ServicesDep, UidDep
from yuxi.api.schemas import FileEntryView, FileList
from yuxi.errors import FileTooLarge
from yuxi.limits import FILE_API_MAX_BYTES

router = APIRouter(prefix="/api/v1/workspace", tags=["workspace"])

TEXT = "text/plain; charset=utf-8"


@router.get("/files", response_model=FileList)
async def list_files(uid: UidDep, services: ServicesDep, path: str = "") -> FileList:
    entries = await services.files.list_files(uid, path)
    return FileList(
        files=[
            FileEntryView(path=e.path, size=e.size, is_dir=e.is_dir, mtime=e.mtime) for e in entries
        ]
    )


@router.get(
    "/files/{path:path}",
    response_class=Response,
    responses={200: {"content": {TEXT: {}}}},
)
async def read_file(path: str, uid: UidDep, services: ServicesDep) -> Response:
    file = await services.files.read_file(uid, path)
    return Response(content=file.data, media_type=TEXT, headers={"ETag": file.etag})


@router.put(
    "/files/{path:path}",
    status_code=204,
    response_class=Response,
    openapi_extra={
        "requestBody": {"content": {TEXT: {"schema": {"type": "string"}}}, "required": True}
    },
)
async def write_file(
    path: str,
    request: Request,
    uid: UidDep,
    services: ServicesDep,
    if_match: Annotated[str | None, Header()] = None,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    data = await read_bounded_body(request, FILE_API_MAX_BYTES, _file_too_large)
    etag = await services.files.write_file(
        uid, path, data, if_match=if_match, if_none_match=if_none_match
    )
    return Response(status_code=204, headers={"ETag": etag})


@router.delete("/files/{path:path}", status_code=204, response_class=Response)
async def delete_file(
    path: str,
    uid: UidDep,
    services: ServicesDep,
    if_match: Annotated[str | None, Header()] = None,
) -> Response:
    await services.files.delete_file(uid, path, if_match=if_match)
    return Response(status_code=204)


def _file_too_large() -> FileTooLarge:
    return FileTooLarge(f"files may be at most {FILE_API_MAX_BYTES} bytes")
