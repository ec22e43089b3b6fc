"""The open event streams' safety net (``yuxi.api.live``) and the token check in every page a
stream reads (``ChatService.stream_page``): a stream that opens is checked by its own first
read, never by a sweep over every open stream; an expiry a page reports moves the sweeper's
next look earlier."""

from __future__ import annotations

import asyncio
import gc
import math
from collections.abc import AsyncGenerator
from typing import Any, cast

import httpx
import pytest
from sqlalchemy import text
from starlette.requests import Request

from tests.support.factories import make_user
from tests.support.statements import counting
from tests.support.waiting import until
from yuxi.api.app import create_app
from yuxi.api.live import LiveStreams
from yuxi.api.routes_runs import run_events
from yuxi.bootstrap import Container, open_notifications
from yuxi.db.notifications import RUN_EVENTS
from yuxi.errors import NotFound, Unauthorized
from yuxi.repositories.token_repository import hash_credential

pytestmark = pytest.mark.pg

NEVER = 3600.0


async def _pending_run(container: Container, uid: str) -> str:
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, "hello")
    return run.id


async def _expire(container: Container, token: str) -> None:
    """``token`` expired a second ago, by the database clock."""
    async with container.session_factory() as s, s.begin():
        await s.execute(
            text(
                "UPDATE api_tokens SET expires_at = now() - interval '1 second' "
                "WHERE token_hash = :h"
            ),
            {"h": hash_credential(token)},
        )


async def test_each_page_tells_whether_the_streams_token_still_authenticates_its_user(
    container: Container,
) -> None:
    users, chat = container.services.users, container.services.chat
    owner = await users.create_user("pia")
    other = await users.create_user("quin")
    run_id = await _pending_run(container, owner.uid)
    expiring = (await users.create_token(owner.uid, label="b", expires_in_days=1)).token

    forever = await chat.stream_page(owner.uid, run_id, 0, token=owner.token)
    assert forever.token_left is not None and math.isinf(forever.token_left)
    day = await chat.stream_page(owner.uid, run_id, 0, token=expiring)
    assert day.token_left is not None and 86_000 < day.token_left <= 86_400
    # Another user's valid token, a token never issued, no token: no standing.
    assert (await chat.stream_page(owner.uid, run_id, 0, token=other.token)).token_left is None
    assert (await chat.stream_page(owner.uid, run_id, 0, token="yx_unknown")).token_left is None
    assert (await chat.stream_page(owner.uid, run_id, 0)).token_left is None
    # Expired by the database clock, or revoked: none either — and the events are still read
    # (the route sends none of them: it ends the stream first).
    await _expire(container, expiring)
    assert (await chat.stream_page(owner.uid, run_id, 0, token=expiring)).token_left is None
    assert await users.revoke_tokens(owner.uid)
    revoked = await chat.stream_page(owner.uid, run_id, 0, token=owner.token)
    assert revoked.token_left is None and revoked.events


async def test_opening_a_stream_sweeps_nothing_and_an_earlier_expiry_moves_the_next_sweep(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, every stream that opened made the sweeper read every open stream's token and
    run (two statements over lists as long as the open streams, once per run)."""
    uid = await make_user(container)
    token = (await container.services.users.create_token(uid, label="t")).token
    run_id = await _pending_run(container, uid)
    chat = container.services.chat
    sweeps: list[tuple[list[str], list[str]]] = []
    real = chat.stream_state

    async def counted(tokens: list[str], run_ids: list[str]) -> Any:
        sweeps.append((tokens, run_ids))
        return await real(tokens, run_ids)

    monkeypatch.setattr(chat, "stream_state", counted)
    async with open_notifications(container) as hub:
        live = LiveStreams(hub, container.services, poll_seconds=NEVER)
        live.start()
        try:
            with live.watch(run_id, uid, token, 0) as first:
                live.token_left(first, math.inf)
                with live.watch(run_id, uid, token, 0) as second:
                    live.token_left(second, 3000.0)
                    await asyncio.sleep(0.3)
                    assert sweeps == []  # opened and reported: no sweep
                    live.token_left(second, 0.2)  # expires sooner than the hour-long poll
                    await until("the sweep at the expiry", lambda: sweeps, within=10, poll=0.02)
                    assert sweeps[0] == ([token], [run_id])
                    assert len(sweeps) == 1
        finally:
            await live.aclose()


async def test_a_stream_opens_on_its_token_alone_and_a_bad_token_is_refused_first(
    container: Container,
) -> None:
    """``ChatService.open_stream``: the token names the user; that user's run is read with its
    first page and the token's standing, in one statement. A token that authenticates nobody
    is Unauthorized whether or not the run exists (a caller without a valid token learns
    nothing of runs); a valid token of another user is NotFound."""
    users, chat = container.services.users, container.services.chat
    owner = await users.create_user("ria")
    other = await users.create_user("sol")
    run_id = await _pending_run(container, owner.uid)
    expiring = (await users.create_token(owner.uid, label="b", expires_in_days=1)).token

    with counting(container.engine) as seen:
        uid, page = await chat.open_stream(owner.token, run_id, 0)
    assert uid == owner.uid and [e.event_type for e in page.events] == ["run_status"]
    assert page.token_left is not None and math.isinf(page.token_left) and not page.settled
    assert (len(seen.statements), seen.round_trips) == (1, 1), seen.statements
    _, day = await chat.open_stream(expiring, run_id, 0)
    assert day.token_left is not None and 86_000 < day.token_left <= 86_400
    _, later = await chat.open_stream(owner.token, run_id, 1)
    assert later.events == []

    with pytest.raises(NotFound):
        await chat.open_stream(other.token, run_id, 0)
    with pytest.raises(NotFound):
        await chat.open_stream(owner.token, "no-such-run", 0)
    for bad in ("yx_unknown", "", "é" * 3, "x" * 257):
        for run in (run_id, "no-such-run"):
            with pytest.raises(Unauthorized):
                await chat.open_stream(bad, run, 0)
    await _expire(container, expiring)
    with pytest.raises(Unauthorized):
        await chat.open_stream(expiring, run_id, 0)
    assert await users.revoke_tokens(owner.uid)
    with pytest.raises(Unauthorized):
        await chat.open_stream(owner.token, run_id, 0)


async def test_a_stream_refused_or_never_started_lets_go_of_its_subscription(
    container: Container,
) -> None:
    """The stream subscribes to its run's wake-ups before its first read; a refused request
    (401, 404) and a response whose body never runs (its client gone first) leave no
    subscription behind in the process's hub."""
    users = container.services.users
    owner = await users.create_user("tao")
    other = await users.create_user("uma")
    run_id = await _pending_run(container, owner.uid)
    app = create_app(container, workers=0)
    hub = app.state.live.hub
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        for token, status in (("yx_unknown", 401), (other.token, 404)):
            headers = {"Authorization": f"Bearer {token}"}
            refused = await client.get(f"/api/v1/runs/{run_id}/events", headers=headers)
            assert refused.status_code == status
            assert hub.subscribers(RUN_EVENTS) == 0
    request = _request(app, run_id, owner.token)
    response = await run_events(
        run_id, owner.token, container.services, app.state.live, request, None, None
    )
    assert hub.subscribers(RUN_EVENTS) == 1
    del response
    gc.collect()
    assert hub.subscribers(RUN_EVENTS) == 0


def _request(app: Any, run_id: str, token: str) -> Request:
    scope = {
        "type": "http",
        "app": app,
        "method": "GET",
        "path": f"/api/v1/runs/{run_id}/events",
        "headers": [(b"authorization", f"Bearer {token}".encode())],
        "query_string": b"",
    }

    async def never() -> Any:  # the client neither sends nor leaves
        await asyncio.Event().wait()

    return Request(scope, receive=never)


async def test_an_event_committed_right_after_a_streams_first_read_still_wakes_it(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream takes its run's wake-ups before its first read (``ChatService.open_stream``):
    an event committed after that read — its notification heard by the process before the
    stream's body even starts — still wakes the stream at once. Were the subscription taken
    after the read, the stream would sleep until the safety sweep (an hour here)."""
    users, chat = container.services.users, container.services.chat
    owner = await users.create_user("vic")
    run_id = await _pending_run(container, owner.uid)
    opened = chat.open_stream
    async with open_notifications(container) as hub:

        async def then_an_event(token: str, run: str, after: int, limit: int = 500) -> Any:
            page = await opened(token, run, after, limit)
            with hub.subscribe(RUN_EVENTS, run_id) as heard:
                async with container.uow() as uow:
                    await uow.events.append(run_id, "token", {"text": "qzxlate"})
                    await uow.commit()
                assert await heard.wait(10), "the event's notification never arrived"
            return page

        monkeypatch.setattr(chat, "open_stream", then_an_event)
        live = LiveStreams(hub, container.services, poll_seconds=NEVER)
        live.start()
        try:
            app = create_app(container, workers=0)
            request = _request(app, run_id, owner.token)
            response = await run_events(
                run_id, owner.token, container.services, live, request, None, None
            )
            body = cast(AsyncGenerator[dict[str, str], None], response.body_iterator)
            first = await asyncio.wait_for(anext(body), 10)
            late = await asyncio.wait_for(anext(body), 10)
            assert (first["event"], late["event"]) == ("run_status", "token")
            assert "qzxlate" in late["data"]
            await body.aclose()
        finally:
            await live.aclose()
