"""``/api/v1/me`` and the memory switch."""

from __future__ import annotations

from fastapi import APIRouter

from yuxi.api.deps import ContainerDep, UidDep
from yuxi.api.schemas import ConfigBody, ConfigView, MeView
from yuxi.errors import NotFound
from yuxi.repositories.user_repository import UserRepository

router = APIRouter(prefix="/api/v1/me", tags=["me"])


@router.get("", response_model=MeView)
async def me(uid: UidDep, container: ContainerDep) -> MeView:
    async with container.session_factory() as session:
        user = await UserRepository(session).get(uid)
    if user is None:
        raise NotFound("user not found")
    return MeView(uid=user.uid, name=user.name)


@router.get("/config", response_model=ConfigView)
async def get_config(uid: UidDep, container: ContainerDep) -> ConfigView:
    return ConfigView(enable_memory=await container.memory.memory_enabled(uid))


@router.put("/config", response_model=ConfigView)
async def put_config(body: ConfigBody, uid: UidDep, container: ContainerDep) -> ConfigView:
    async with container.session_factory() as session, session.begin():
        await UserRepository(session).set_memory_enabled(uid, body.enable_memory)
    if body.enable_memory:
        await container.workspace(uid).ensure_user_workspace()
    return ConfigView(enable_memory=body.enable_memory)
