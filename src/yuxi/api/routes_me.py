"""``/api/v1/me``: the caller, the memory switch, and the whole account (export, deletion)."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from dataclasses import asdict
from typing import IO, Any

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from yuxi.api.deps import ServicesDep, UidDep
from yuxi.api.schemas import AccountDeleteBody, ConfigBody, ConfigView, MeView
from yuxi.limits import ACCOUNT_EXPORT_CHUNK_BYTES

router = APIRouter(prefix="/api/v1/me", tags=["me"])


@router.get("", response_model=MeView)
async def me(uid: UidDep, services: ServicesDep) -> MeView:
    user = await services.users.get_user(uid)
    return MeView(uid=user.uid, name=user.name)


@router.get("/config", response_model=ConfigView)
async def get_config(uid: UidDep, services: ServicesDep) -> ConfigView:
    return ConfigView(enable_memory=await services.users.memory_enabled(uid))


@router.put("/config", response_model=ConfigView)
async def put_config(body: ConfigBody, uid: UidDep, services: ServicesDep) -> ConfigView:
    enabled = await services.users.set_memory_enabled(uid, body.enable_memory)
    return ConfigView(enable_memory=enabled)


async def _chunks(spool: IO[bytes]) -> AsyncIterator[bytes]:
    """The finished zip from its temporary file, a chunk at a time; the file goes at the end."""
    try:
        while chunk := await asyncio.to_thread(spool.read, ACCOUNT_EXPORT_CHUNK_BYTES):
            yield chunk
    finally:
        spool.close()


@router.get("/export", response_class=StreamingResponse)
async def export_account(uid: UidDep, services: ServicesDep) -> StreamingResponse:
    """Everything the caller owns as one zip. It is written to an unnamed temporary file first
    (so an error is still an error response, and memory stays bounded), then streamed."""
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _chunks or below
    try:
        await services.accounts.export_account(uid, spool)
        await asyncio.to_thread(spool.seek, 0)
    except BaseException:
        spool.close()
        raise
    return StreamingResponse(
        _chunks(spool),
        media_type="application/zip",
        headers={"Content-Disposition": 'attachment; filename="yuxi-account-export.zip"'},
    )


@router.delete("")
async def delete_account(
    body: AccountDeleteBody, uid: UidDep, services: ServicesDep
) -> dict[str, Any]:
    """Delete the caller's account and everything in it, once ``confirm`` is their name."""
    deleted = await services.accounts.delete_account(uid, confirm=body.confirm)
    return {"deleted": asdict(deleted)}
