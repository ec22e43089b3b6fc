"""Runs: start (optionally wait), view, follow (SSE, with replay), resume, cancel; agent calls."""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from sse_starlette.sse import EventSourceResponse

from yuxi.api.deps import BearerTokenDep, ServicesDep, UidDep
from yuxi.api.live import LiveStreams, get_live
from yuxi.api.schemas import ResumeBody, RunCreate, RunList
from yuxi.db.notifications import RUN_EVENTS
from yuxi.limits import RUN_WAIT_MAX_SECONDS, STREAM_IDLE_CHECK_SECONDS, STREAM_PING_SECONDS
from yuxi.observability.metrics import track_open
from yuxi.services.chat.service import ChatService
from yuxi.services.chat.views import RunSummary, StreamPage, run_view
from yuxi.vocabulary import SETTLED_RUN_STATUSES

router = APIRouter(prefix="/api/v1", tags=["runs"])

LiveDep = Annotated[LiveStreams, Depends(get_live)]


async def _settle(
    chat: ChatService, live: LiveStreams, uid: str, run: RunSummary, wait: bool
) -> RunSummary:
    """The run now, or (``wait``) once it has settled or ``RUN_WAIT_MAX_SECONDS`` have passed.

    Waiting costs no query loop: the request sleeps until the process's listener hears of a new
    event of this run (every status change writes one), then re-reads the run; the safety poll
    (``poll_seconds``) only bounds how late a lost notification makes it."""
    if not wait or run.status in SETTLED_RUN_STATUSES:
        return run
    loop = asyncio.get_running_loop()
    deadline = loop.time() + RUN_WAIT_MAX_SECONDS
    with live.hub.subscribe(RUN_EVENTS, run.run_id) as events:
        while True:
            # Subscribed first, read second: an event committed in between still wakes us.
            run = run_view(await chat.get_run(uid, run.run_id))
            left = deadline - loop.time()
            if run.status in SETTLED_RUN_STATUSES or left <= 0:
                return run
            await events.wait(min(live.poll_seconds, left))


@router.post("/threads/{thread_id}/runs", response_model=RunSummary, status_code=202)
async def start_run(
    thread_id: str,
    body: RunCreate,
    uid: UidDep,
    services: ServicesDep,
    live: LiveDep,
    response: Response,
    wait: bool = False,
) -> RunSummary:
    run, created = await services.chat.submit(
        uid, thread_id, body.input, request_id=body.request_id
    )
    view = await _settle(services.chat, live, uid, run_view(run), wait)
    response.status_code = 200 if view.status in SETTLED_RUN_STATUSES else (202 if created else 200)
    return view


@router.get("/threads/{thread_id}/runs", response_model=RunList)
async def list_thread_runs(thread_id: str, uid: UidDep, services: ServicesDep) -> RunList:
    """The thread's top-level runs, oldest first."""
    runs = await services.chat.thread_runs(uid, thread_id)
    return RunList(runs=[run_view(r) for r in runs])


@router.post("/agent-calls", response_model=RunSummary, status_code=202)
async def agent_call(
    body: RunCreate,
    uid: UidDep,
    services: ServicesDep,
    live: LiveDep,
    response: Response,
    wait: bool = False,
) -> RunSummary:
    run, _ = await services.chat.submit_agent_call(uid, body.input, request_id=body.request_id)
    view = await _settle(services.chat, live, uid, run_view(run), wait)
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
    live: LiveDep,
    response: Response,
    wait: bool = False,
) -> RunSummary:
    run, _ = await services.chat.resume(uid, run_id, body.decision)
    view = await _settle(services.chat, live, uid, run_view(run), wait)
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
    token: BearerTokenDep,
    services: ServicesDep,
    live: LiveDep,
    request: Request,
    last_event_id: Annotated[str | None, Header()] = None,
    after: int | None = Query(default=None, ge=0, le=2**31 - 1),
) -> EventSourceResponse:
    """Server-sent events of a run: everything after ``Last-Event-ID`` (or ``after``), then
    live until the run settles. Each event's ``id`` is its sequence number. The stream also
    ends once its token stops being valid (revoked or expired).

    The stream opens on one query (``ChatService.open_stream``: the token's user, that user's
    run, its first page), so a bad token is a 401 and another user's run a 404 before the
    stream starts. A quiet stream makes no query: it is woken by the process's listener when
    its run gets an event (and by the per-process safety sweep in :mod:`yuxi.api.live`), then
    re-reads."""
    start = after or 0
    if last_event_id is not None and last_event_id.strip().isdigit():
        start = min(int(last_event_id.strip()), 2**31 - 1)
    chat = services.chat
    # Subscribed before the first read, so nothing committed after it is missed.
    sub = live.subscribe(run_id)
    try:
        uid, first = await chat.open_stream(token, run_id, start)
    except BaseException:
        sub.close()
        raise

    async def stream() -> AsyncIterator[dict[str, Any]]:
        seq = start
        page: StreamPage | None = first
        with live.watch(run_id, uid, token, seq, sub) as watch:
            while not watch.ended:
                if page is None:
                    # One statement per wake: the status, then the events after ``seq``. A
                    # wake-up pending from before this read is forgotten: the read sees what it
                    # announced.
                    watch.sub.clear()
                    page = await chat.stream_page(uid, run_id, seq, token=token)
                if page.token_left is None:
                    return  # the token no longer authenticates the user: nothing more is sent
                live.token_left(watch, page.token_left)
                for e in page.events:
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
                watch.seen = seq
                settled, more, page = page.settled, page.more, None
                if more:
                    continue
                if settled:
                    return
                while not await watch.sub.wait(STREAM_IDLE_CHECK_SECONDS):
                    if await request.is_disconnected():
                        return

    events = stream()
    # A stream whose body never starts (its client gone first) still lets go of the
    # subscription: the hub would hold it for the life of the process.
    weakref.finalize(events, sub.close)
    open_streams = request.app.state.container.metrics.sse_streams_open
    return EventSourceResponse(track_open(open_streams, events), ping=STREAM_PING_SECONDS)
