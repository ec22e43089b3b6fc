"""The open event streams and waiting requests of one API process, kept live by notifications.

No stream polls the database on its own. Each open stream is a :class:`StreamWatch`: it sleeps
on a :class:`~yuxi.db.notifications.Subscription` to its run's events and re-reads the table
only when woken. One sweeper task per process is the safety net for all of them together:

* when a revocation is notified, when the earliest token among the open streams reaches its
  expiry (computed from the database's own ``expires_at - now()``), and every
  ``poll_seconds``, it reads every open stream's token standing in **one** statement and the
  last event seq of every watched run in another (``ChatService.stream_state``);
* it ends the streams whose token no longer authenticates the same user, and wakes the ones
  whose run has events they have not sent (a lost notification only delays them).

Opening a stream costs the sweeper nothing: each page a stream reads checks its token in the
same statement (the stream ends at once if it no longer authenticates its user) and tells how
long it has left, which moves the sweeper's next look earlier if it expires first
(:meth:`LiveStreams.token_left`). So a stream that opens is checked by its own first read, not
by a sweep over every open stream — work that grew with the number of streams, once per run.

With no stream open the sweeper makes no query at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

from fastapi import Request

from yuxi.db.notifications import RUN_EVENTS, TOKENS_REVOKED, Notifications, Subscription
from yuxi.services.service_set import Services

_log = logging.getLogger(__name__)


@dataclass(eq=False)
class StreamWatch:
    """One open event stream: its run, its credential, the last seq it sent."""

    run_id: str
    uid: str
    token: str
    sub: Subscription
    live: LiveStreams
    seen: int = 0
    #: Set once its token stops authenticating ``uid``; the stream then ends.
    ended: bool = field(default=False)
    #: When its token expires (the loop's clock), as its last page read it; None: never.
    expires_at: float | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.live._close(self)


class LiveStreams:
    def __init__(self, hub: Notifications, services: Services, *, poll_seconds: float) -> None:
        self.hub = hub
        self.poll_seconds = poll_seconds
        self._services = services
        self._streams: set[StreamWatch] = set()
        self._kick = hub.subscribe(TOKENS_REVOKED)
        #: When the sweeper looks next for an expiry (the loop's clock), and the event that
        #: makes it reschedule (without a sweep) when a stream's token expires earlier.
        self._deadline: float | None = None
        self._reschedule = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._sweep_forever(), name="yuxi-stream-sweeper")

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._kick.close()

    def subscribe(self, run_id: str) -> Subscription:
        """The wake-ups of ``run_id``'s events, for a stream to take before its first read
        (:meth:`watch`)."""
        return self.hub.subscribe(RUN_EVENTS, run_id)

    def watch(
        self, run_id: str, uid: str, token: str, seen: int, sub: Subscription | None = None
    ) -> StreamWatch:
        """Register an open stream, subscribed before its first read — here, or earlier with
        ``sub`` (:meth:`subscribe`) — so nothing committed after that read is missed. Use it as
        a context manager; it closes the subscription."""
        sub = self.subscribe(run_id) if sub is None else sub
        watch = StreamWatch(run_id, uid, token, sub, self)
        watch.seen = seen
        self._streams.add(watch)
        return watch

    def token_left(self, watch: StreamWatch, seconds: float) -> None:
        """A page of ``watch`` read that its token has ``seconds`` left by the database clock
        (``inf``: no expiry). If that comes before the sweeper's next look, it looks then
        instead: the stream ends when its token expires, even if it is quiet."""
        if math.isinf(seconds):
            watch.expires_at = None
            return
        at = asyncio.get_running_loop().time() + max(0.0, seconds) + 0.05  # the database agrees
        watch.expires_at = at
        if self._deadline is None or at < self._deadline:
            self._deadline = at
            self._reschedule.set()

    def _close(self, watch: StreamWatch) -> None:
        self._streams.discard(watch)
        watch.sub.close()

    async def _sweep_forever(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self._reschedule.clear()
            until = loop.time() + self.poll_seconds
            if self._deadline is not None:
                until = min(until, self._deadline)
            if not await self._wait(max(0.0, until - loop.time())):
                continue  # an earlier expiry: wait for it instead
            if not self._streams:
                self._deadline = None
                continue
            try:
                self._deadline = await self._sweep()
            except asyncio.CancelledError:
                raise
            except Exception:  # the database is away: try again at the next interval
                _log.warning("stream sweep failed", exc_info=True)
                self._deadline = None

    async def _wait(self, seconds: float) -> bool:
        """Until a revocation is notified or ``seconds`` pass (True: sweep), or a stream's
        token turns out to expire earlier (False: reschedule)."""
        kick = asyncio.ensure_future(self._kick.wait(None))
        earlier = asyncio.ensure_future(self._reschedule.wait())
        try:
            done, _ = await asyncio.wait(
                (kick, earlier), timeout=seconds, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for future in (kick, earlier):
                future.cancel()
            await asyncio.gather(kick, earlier, return_exceptions=True)
        return kick in done or earlier not in done

    async def _sweep(self) -> float | None:
        """One sweep for every open stream together (two statements, however many streams):
        end those whose token no longer authenticates their user, wake those whose run has
        events they have not sent. Returns when the earliest still-valid token expires (loop
        time), if any does."""
        streams = list(self._streams)
        standings, latest = await self._services.chat.stream_state(
            sorted({s.token for s in streams}), sorted({s.run_id for s in streams})
        )
        now = asyncio.get_running_loop().time()
        earliest: float | None = None
        for stream in streams:
            standing = standings.get(stream.token)
            if standing is None or standing[0] != stream.uid:
                stream.ended = True
                stream.sub.wake()
                continue
            if latest.get(stream.run_id, 0) > stream.seen:
                stream.sub.wake()
            left = standing[1]
            if left is not None:
                at = now + max(0.0, left) + 0.05  # just past it, so the database agrees
                earliest = at if earliest is None else min(earliest, at)
        return earliest


async def get_live(request: Request) -> LiveStreams:
    live: LiveStreams = request.app.state.live
    return live
