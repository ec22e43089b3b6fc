"""``POST /api/v1/session``: exchange a login code (what a login link carries) for a session
token. The one route that takes no bearer token: the code is the credential, spent once."""

from __future__ import annotations

from fastapi import APIRouter

from yuxi.api.deps import ServicesDep
from yuxi.api.schemas import SessionCreate, SessionView

router = APIRouter(prefix="/api/v1", tags=["session"])


@router.post("/session", response_model=SessionView, status_code=201)
async def create_session(body: SessionCreate, services: ServicesDep) -> SessionView:
    issued = await services.users.exchange_login_code(body.login_code)
    return SessionView(token=issued.token, expires_at=issued.expires_at, uid=issued.uid)
