"""``/api/v1/me`` and the memory switch."""

from __future__ import annotations

from fastapi import APIRouter

from yuxi.api.deps import ServicesDep, UidDep
from yuxi.api.schemas import ConfigBody, ConfigView, MeView

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
