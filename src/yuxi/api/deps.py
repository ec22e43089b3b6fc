"""Request dependencies: the container's services and the caller's uid (from the Bearer token)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from yuxi.bootstrap import Services
from yuxi.errors import Unauthorized

_bearer = HTTPBearer(auto_error=False)


def get_services(request: Request) -> Services:
    services: Services = request.app.state.container.services
    return services


async def get_uid(
    services: Annotated[Services, Depends(get_services)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise Unauthorized("missing bearer token")
    return await services.users.authenticate(credentials.credentials)


ServicesDep = Annotated[Services, Depends(get_services)]
UidDep = Annotated[str, Depends(get_uid)]
