"""The workspace file API, with strong ETags and ``If-Match``.

``agents/MEMORY.md`` is special: every write or delete of it goes through the memory service's
same-lock writer, so a user's edit and the agent's ``remember_memory`` can never lose each
other's update, and a stale edit is refused with 412 instead of overwriting.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Request, Response

from yuxi.api.deps import ContainerDep, UidDep
from yuxi.api.schemas import FileEntryView, FileList
from yuxi.errors import FileTooLarge, InvalidArgument, PreconditionFailed, WorkspaceFileNotFound
from yuxi.workspace.filesystem import Workspace, etag_for

router = APIRouter(prefix="/api/v1/workspace", tags=["workspace"])

FILE_MAX_BYTES = 1024 * 1024
TEXT = "text/plain; charset=utf-8"


def _is_memory(path: str) -> bool:
    return path == Workspace.MEMORY_PATH


def _matches(if_match: str, etag: str) -> bool:
    tags = {t.strip().removeprefix("W/") for t in if_match.split(",")}
    return "*" in tags or etag in tags


@router.get("/files", response_model=FileList)
async def list_files(uid: UidDep, container: ContainerDep, path: str = "") -> FileList:
    workspace = container.workspace(uid)
    await workspace.ensure_user_workspace()
    entries = await workspace.list_files(path, recursive=True)
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
async def read_file(path: str, uid: UidDep, container: ContainerDep) -> Response:
    workspace = container.workspace(uid)
    await workspace.ensure_user_workspace()
    if _is_memory(path):
        data, etag = await container.memory.read_memory_file(uid)
    else:
        data = await workspace.read_file(path, FILE_MAX_BYTES)
        etag = etag_for(data)
    return Response(content=data, media_type=TEXT, headers={"ETag": etag})


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
    container: ContainerDep,
    if_match: Annotated[str | None, Header()] = None,
) -> Response:
    data = await _body(request)
    workspace = container.workspace(uid)
    await workspace.ensure_user_workspace()
    if _is_memory(path):
        etag = await container.memory.write_memory_file(uid, data, if_match=if_match)
    else:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidArgument("files must be valid UTF-8 text") from None
        if if_match is not None:
            try:
                current = etag_for(await workspace.read_file(path, FILE_MAX_BYTES))
            except WorkspaceFileNotFound:
                current = ""
            if not _matches(if_match, current):
                raise PreconditionFailed("the file changed since you loaded it")
        await workspace.write_file(path, data)
        etag = etag_for(data)
    return Response(status_code=204, headers={"ETag": etag})


@router.delete("/files/{path:path}", status_code=204, response_class=Response)
async def delete_file(
    path: str,
    uid: UidDep,
    container: ContainerDep,
    if_match: Annotated[str | None, Header()] = None,
) -> Response:
    workspace = container.workspace(uid)
    if _is_memory(path):
        await container.memory.delete_memory_file(uid, if_match=if_match)
    else:
        if if_match is not None:
            current = etag_for(await workspace.read_file(path, FILE_MAX_BYTES))
            if not _matches(if_match, current):
                raise PreconditionFailed("the file changed since you loaded it")
        await workspace.delete_file(path)
    return Response(status_code=204)


async def _body(request: Request) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > FILE_MAX_BYTES:
            raise FileTooLarge(f"files may be at most {FILE_MAX_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
