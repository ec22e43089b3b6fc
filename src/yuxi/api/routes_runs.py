"""Runs: start (optionally wait), view, follow (SSE, with replay), resume, cancel; agent calls."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request, Response
from sse_starlette.sse import EventSourceResponse

from yuxi.api.deps import BearerTokenDep, ServicesDep, UidDep
from yuxi.api.schemas import ResumeBody, RunCreate, RunList
from yuxi.errors import Unauthorized
from yuxi.observability.metrics import track_open
from yuxi.services.chat_service import ChatService
from yuxi.services.chat_views import RunSummary, run_view
from yuxi.services.user_service import UserService
from yuxi.vocabulary import SETTLED_RUN_STATUSES

router = APIRouter(prefix="/api/v1", tags=["runs"])

WAIT_SECONDS = 120.0
POLL_SECONDS = 0.1
#: An open event stream re-checks its bearer token this often: a stream ends soon after its
#: token is revoked or expires (the client's reconnect then gets 401).
STREAM_AUTH_RECHECK_SECONDS = 1.0


class _TokenWatch:
    """Whether the token a stream was opened with still authenticates the same user, asked of
    the database at most every ``STREAM_AUTH_RECHECK_SECONDS``."""

    def __init__(self, users: UserService, token: str, uid: str) -> None:
        self._users = users
        self._token = token
        self._uid = uid
        self._checked = asyncio.get_running_loop().time()

    async def still_valid(self) -> bool:
        now = asyncio.get_running_loop().time()
        if now - self._checked < STREAM_AUTH_RECHECK_SECONDS:
            return True
        self._checked = now
        try:
            return await self._users.authenticate(self._token) == self._uid
        except Unauthorized:
            return False


async def _settle(chat: ChatService, uid: str, run: RunSummary, wait: bool) -> RunSummary:
    """The run now, or (``wait``) once it has settled or ``WAIT_SECONDS`` have passed."""
    deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
    while (
        wait
        and run.status not in SETTLED_RUN_STATUSES
        and asyncio.get_running_loop().time() < deadline
    ):
        await asyncio.sleep(POLL_SECONDS)
        run = run_view(await chat.get_run(uid, run.run_id))
    return run


@router.post("/threads/{thread_id}/runs", response_model=RunSummary, status_code=202)
async def start_run(
    thread_id: str,
    body: RunCreate,
    uid: UidDep,
    services: ServicesDep,
    response: Response,
    wait: bool = False,
) -> RunSummary:
    run, created = await services.chat.submit(
        uid, thread_id, body.input, request_id=body.request_id
    )
    view = await _settle(services.chat, uid, run_view(run), wait)
    response.status_code = 200 if view.status in SETTLED_RUN_STATUSES else (202 if created else 200)
    return view


@router.get("/threads/{thread_id}/runs", response_model=RunList)
async def list_thread_runs(thread_id: str, uid: UidDep, services: ServicesDep) -> RunList:
    """The thread's top-level runs, oldest first."""
    runs = await services.chat.thread_runs(uid, thread_id)
    return RunList(runs=[run_view(r) for r in runs])


@router.post("/agent-calls", response_model=RunSummary, status_code=202)
async def agent_call(
    body: RunCreate, uid: UidDep, services: ServicesDep, response: Response, wait: bool = False
) -> RunSummary:
    run, _ = await services.chat.submit_agent_call(uid, body.input, request_id=body.request_id)
    view = await _settle(services.chat, uid, run_view(run), wait)
    response.status_code = 200 if view.status in SETTLED_RUN_STATUSES else 202
    return view


@router.get("/runs/{run_id}", response_model=RunSummary)
async def get_run(run_id: str, uid: UidDep, services: ServicesDep) -> RunSummary:
    return run_view(await services.chat.get_run(uid, run_id))


@router.post("/runs/{run_id}/resume", response_model=RunSummary, status_code=202)
async def resume_run(
    run_id: str,
    body: ResumeBody,
    uid: UidDep,
    services: ServicesDep,
    response: Response,
    wait: bool = False,
) -> RunSummary:
    run, _ = await services.chat.resume(uid, run_id, body.decision)
    view = await _settle(services.chat, uid, run_view(run), wait)
    response.status_code = 200 if view.status in SETTLED_RUN_STATUSES else 202
    return view


@router.post("/runs/{run_id}/cancel", response_model=RunSummary)
async def cancel_run(run_id: str, uid: UidDep, services: ServicesDep) -> RunSummary:
    return run_view(await services.chat.cancel(uid, run_id))


@router.get(
    "/runs/{run_id}/events",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def run_events(
    run_id: str,
    uid: UidDep,
    token: BearerTokenDep,
    services: ServicesDep,
    request: Request,
    last_event_id: Annotated[str | None, Header()] = None,
    after: int | None = Query(default=None, ge=0, le=2**31 - 1),
) -> EventSourceResponse:
    """Server-sent events of a run: everything after ``Last-Event-ID`` (or ``after``), then
    live until the run settles. Each event's ``id`` is its sequence number. The stream also
    ends once its token stops being valid (revoked or expired)."""
    start = after or 0
    if last_event_id is not None and last_event_id.strip().isdigit():
        start = min(int(last_event_id.strip()), 2**31 - 1)
    chat = services.chat
    await chat.get_run(uid, run_id)  # 404 before the stream starts
    watch = _TokenWatch(services.users, token, uid)

    async def stream() -> AsyncIterator[dict[str, Any]]:
        seq = start
        while True:
            if not await watch.still_valid():
                return
            events = await chat.events_after(uid, run_id, seq)
            for e in events:
                seq = e.seq
                yield {
                    "id": str(e.seq),
                    "event": e.event_type,
                    "data": json.dumps(
                        {"seq": e.seq, "type": e.event_type, "data": e.data},
                        ensure_ascii=False,
                        separators=(",", ":"),
                    ),
                }
            if not events:
                run = await chat.get_run(uid, run_id)
                if run.status in SETTLED_RUN_STATUSES:
                    tail = await chat.events_after(uid, run_id, seq)
                    if not tail:
                        return
                    continue
                if await request.is_disconnected():
                    return
                await asyncio.sleep(POLL_SECONDS)

    open_streams = request.app.state.container.metrics.sse_streams_open
    return EventSourceResponse(track_open(open_streams, stream()), ping=15)
