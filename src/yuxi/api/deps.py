"""Request dependencies: the container's services, the caller's Bearer token and its uid.

A credential is read from the ``Authorization`` header only, never from the URL: a query string
ends up in access logs, browser history and Referer headers.

Every dependency here is a coroutine function, even one that never waits: FastAPI runs a plain
``def`` dependency in its thread pool, a thread hop (and a wake-up of the event loop) on every
request for what is an attribute read (``tests/unit/test_api_dependencies.py`` holds the rule).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from yuxi.bootstrap import Services
from yuxi.errors import Unauthorized

_bearer = HTTPBearer(auto_error=False)


async def get_services(request: Request) -> Services:
    services: Services = request.app.state.container.services
    return services


async def get_bearer_token(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise Unauthorized("missing bearer token")
    return credentials.credentials


async def get_uid(
    services: Annotated[Services, Depends(get_services)],
    token: Annotated[str, Depends(get_bearer_token)],
) -> str:
    return await services.users.authenticate(token)


ServicesDep = Annotated[Services, Depends(get_services)]
#: The raw bearer token, for a long request that must re-check it (the SSE stream).
BearerTokenDep = Annotated[str, Depends(get_bearer_token)]
UidDep = Annotated[str, Depends(get_uid)]
