"""Runs: start (optionally wait), view, follow (SSE, with replay), resume, cancel; agent calls."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request, Response
from sse_starlette.sse import EventSourceResponse

from yuxi.api.deps import ChatDep, UidDep
from yuxi.api.schemas import ResumeBody, RunCreate, RunList, RunView
from yuxi.db.models import AgentRun
from yuxi.services.chat_service import ChatService, run_view

router = APIRouter(prefix="/api/v1", tags=["runs"])

SETTLED = ("completed", "failed", "cancelled", "interrupted")
WAIT_SECONDS = 120.0
POLL_SECONDS = 0.1


async def _settle(chat: ChatService, uid: str, run: AgentRun, wait: bool) -> RunView:
    deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
    while wait and run.status not in SETTLED and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(POLL_SECONDS)
        run = await chat.get_run(uid, run.id)
    return RunView(**run_view(run))


@router.post("/threads/{thread_id}/runs", response_model=RunView, status_code=202)
async def start_run(
    thread_id: str,
    body: RunCreate,
    uid: UidDep,
    chat: ChatDep,
    response: Response,
    wait: bool = False,
) -> RunView:
    run, created = await chat.submit(uid, thread_id, body.input, request_id=body.request_id)
    view = await _settle(chat, uid, run, wait)
    response.status_code = 200 if view.status in SETTLED else (202 if created else 200)
    return view


@router.get("/threads/{thread_id}/runs", response_model=RunList)
async def list_thread_runs(thread_id: str, uid: UidDep, chat: ChatDep) -> RunList:
    """The thread's top-level runs, oldest first."""
    runs = await chat.thread_runs(uid, thread_id)
    return RunList(runs=[RunView(**run_view(r)) for r in runs if r.run_type != "subagent"])


@router.post("/agent-calls", response_model=RunView, status_code=202)
async def agent_call(
    body: RunCreate, uid: UidDep, chat: ChatDep, response: Response, wait: bool = False
) -> RunView:
    run, _ = await chat.submit_agent_call(uid, body.input, request_id=body.request_id)
    view = await _settle(chat, uid, run, wait)
    response.status_code = 200 if view.status in SETTLED else 202
    return view


@router.get("/runs/{run_id}", response_model=RunView)
async def get_run(run_id: str, uid: UidDep, chat: ChatDep) -> RunView:
    return RunView(**run_view(await chat.get_run(uid, run_id)))


@router.post("/runs/{run_id}/resume", response_model=RunView, status_code=202)
async def resume_run(
    run_id: str,
    body: ResumeBody,
    uid: UidDep,
    chat: ChatDep,
    response: Response,
    wait: bool = False,
) -> RunView:
    run, _ = await chat.resume(uid, run_id, body.decision)
    view = await _settle(chat, uid, run, wait)
    response.status_code = 200 if view.status in SETTLED else 202
    return view


@router.post("/runs/{run_id}/cancel", response_model=RunView)
async def cancel_run(run_id: str, uid: UidDep, chat: ChatDep) -> RunView:
    return RunView(**run_view(await chat.cancel(uid, run_id)))


@router.get(
    "/runs/{run_id}/events",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def run_events(
    run_id: str,
    uid: UidDep,
    chat: ChatDep,
    request: Request,
    last_event_id: Annotated[str | None, Header()] = None,
    after: int | None = Query(default=None, ge=0, le=2**31 - 1),
) -> EventSourceResponse:
    """Server-sent events of a run: everything after ``Last-Event-ID`` (or ``after``), then
    live until the run settles. Each event's ``id`` is its sequence number."""
    start = after or 0
    if last_event_id is not None and last_event_id.strip().isdigit():
        start = min(int(last_event_id.strip()), 2**31 - 1)
    await chat.get_run(uid, run_id)  # 404 before the stream starts

    async def stream() -> AsyncIterator[dict[str, Any]]:
        seq = start
        while True:
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
                if run.status in SETTLED:
                    tail = await chat.events_after(uid, run_id, seq)
                    if not tail:
                        return
                    continue
                if await request.is_disconnected():
                    return
                await asyncio.sleep(POLL_SECONDS)

    return EventSourceResponse(stream(), ping=15)
