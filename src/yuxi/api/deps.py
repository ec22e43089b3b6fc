"""Request dependencies: the container and the caller's uid (from the Bearer token)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from yuxi.bootstrap import Container
from yuxi.errors import Unauthorized
from yuxi.repositories.user_repository import UserRepository
from yuxi.services.chat_service import ChatService

_bearer = HTTPBearer(auto_error=False)


def get_container(request: Request) -> Container:
    container: Container = request.app.state.container
    return container


async def get_uid(
    container: Annotated[Container, Depends(get_container)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise Unauthorized("missing bearer token")
    token = credentials.credentials
    if len(token) > 256 or not token.isascii():
        raise Unauthorized("invalid token")
    async with container.session_factory() as session:
        uid = await UserRepository(session).uid_for_token(token)
    if uid is None:
        raise Unauthorized("invalid token")
    return uid


def get_chat(container: Annotated[Container, Depends(get_container)]) -> ChatService:
    return ChatService(container.session_factory)


ContainerDep = Annotated[Container, Depends(get_container)]
UidDep = Annotated[str, Depends(get_uid)]
ChatDep = Annotated[ChatService, Depends(get_chat)]
