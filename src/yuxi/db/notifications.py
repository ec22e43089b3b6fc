"""PostgreSQL LISTEN/NOTIFY: one listening connection per process, fanned out in memory.

Writers call ``pg_notify(channel, id)`` inside the transaction that made the change (the
repositories do), so a notification is delivered exactly when the change commits and never for
a rolled-back one. This module is the receiving side: :class:`Notifications` holds **one**
psycopg connection in autocommit that LISTENs on every channel, and wakes the in-process
:class:`Subscription` objects keyed by ``(channel, payload)`` — however many workers, event
streams and waiting requests the process has, it costs one connection and no query loop.

A notification says only *which* row to look at (a run id); it is never trusted for content or
ownership. A subscriber that wakes re-reads the tables through its service, with the same
ownership checks as ever; a payload that is not a plain id is counted and dropped. Anyone who
can connect to the database can NOTIFY, so a forged notification can at most cause one extra
read.

Losing the connection loses the notifications sent meanwhile. So the listener reconnects with
backoff and, once listening again, wakes **every** subscriber, who re-reads: a lost
notification delays work, it never loses it. TCP keepalives (idle for ``keepalive_seconds``) notice
a silently dead connection without costing a transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Self

import psycopg
from psycopg import sql

_log = logging.getLogger(__name__)

#: A new pending chat/resume run (payload: its id): wake a worker.
RUN_PENDING = "yuxi_run_pending"
#: A run got a new event — every status change writes one (payload: the run id).
RUN_EVENTS = "yuxi_run_events"
#: Somebody asked to cancel a running run (payload: the run id): its worker beats at once.
RUN_CANCEL = "yuxi_run_cancel"
#: Tokens were revoked (payload: the owner's uid): open event streams re-check theirs.
TOKENS_REVOKED = "yuxi_tokens_revoked"
CHANNELS = (RUN_PENDING, RUN_EVENTS, RUN_CANCEL, TOKENS_REVOKED)

#: What an id looks like (run ids are UUIDs, uids are short ASCII names); anything else is
#: not ours and is dropped unread.
_ID = re.compile(r"[A-Za-z0-9_.:-]{1,256}")
_BACKOFF_FIRST = 0.05
_BACKOFF_MAX = 5.0

Connect = Callable[[], Awaitable[psycopg.AsyncConnection[object]]]


@dataclass
class ListenerStats:
    received: int = 0
    #: Payloads that were not an id (forged or foreign), dropped.
    ignored: int = 0
    #: Successful LISTENs after the first one (each woke every subscriber).
    reconnects: int = 0
    connected: bool = False


class Subscription:
    """Wakes when ``channel`` carries ``key`` (or anything, for ``key=None``), or when the
    listener had to reconnect. A wake-up that arrives while nobody waits is kept until the
    next :meth:`wait`, so none is missed between a read and the wait that follows it."""

    def __init__(self, hub: Notifications, channel: str, key: str | None) -> None:
        self._hub = hub
        self.channel = channel
        self.key = key
        self._flag = asyncio.Event()

    def wake(self) -> None:
        self._flag.set()

    def take(self) -> bool:
        """Whether a wake-up is pending, without waiting; clears it."""
        woken = self._flag.is_set()
        self._flag.clear()
        return woken

    def clear(self) -> None:
        """Forget a pending wake-up (call it before re-reading the table)."""
        self._flag.clear()

    async def wait(self, seconds: float | None) -> bool:
        """Wait for a wake-up at most ``seconds`` (None: forever); True when woken. Clears the
        flag."""
        if not self._flag.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._flag.wait(), seconds)
        woken = self._flag.is_set()
        self._flag.clear()
        return woken

    def close(self) -> None:
        self._hub._unsubscribe(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Notifications:
    """The process's one LISTEN connection and its subscribers."""

    def __init__(
        self, url: str, *, keepalive_seconds: float, connect: Connect | None = None
    ) -> None:
        self._url = url
        self._keepalive_seconds = keepalive_seconds
        self._connect = connect or self._default_connect
        self._subs: defaultdict[tuple[str, str | None], set[Subscription]] = defaultdict(set)
        self._task: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()
        self._conn: psycopg.AsyncConnection[object] | None = None
        self.stats = ListenerStats()

    async def _default_connect(self) -> psycopg.AsyncConnection[object]:
        # TCP keepalives, not a ping query, find a silently dead connection: a listener that
        # costs a transaction every few seconds would be most of an idle server's load.
        idle = max(1, int(self._keepalive_seconds))
        conn: psycopg.AsyncConnection[object] = await psycopg.AsyncConnection.connect(
            self._url,
            autocommit=True,
            application_name="yuxi-listener",
            keepalives=1,
            keepalives_idle=idle,
            keepalives_interval=idle,
            keepalives_count=3,
        )
        return conn

    # -- subscribers --------------------------------------------------------------------------

    def subscribe(self, channel: str, key: str | None = None) -> Subscription:
        if channel not in CHANNELS:
            raise ValueError(f"unknown channel {channel!r}")
        sub = Subscription(self, channel, key)
        self._subs[(channel, key)].add(sub)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        subs = self._subs.get((sub.channel, sub.key))
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[(sub.channel, sub.key)]

    def subscribers(self, channel: str) -> int:
        return sum(len(s) for (ch, _), s in self._subs.items() if ch == channel)

    def dispatch(self, channel: str, payload: str) -> None:
        """Wake the subscribers of ``(channel, payload)`` and of the whole channel."""
        self.stats.received += 1
        if channel not in CHANNELS or not _ID.fullmatch(payload):
            self.stats.ignored += 1
            return
        for key in (payload, None):
            for sub in list(self._subs.get((channel, key), ())):
                sub.wake()

    def wake_channel(self, channel: str) -> None:
        """Wake every subscriber of ``channel`` in this process (no database involved)."""
        for (ch, _), subs in list(self._subs.items()):
            if ch == channel:
                for sub in list(subs):
                    sub.wake()

    def wake_all(self) -> None:
        """Every subscriber re-reads (after a reconnect: notifications may have been lost)."""
        for subs in list(self._subs.values()):
            for sub in list(subs):
                sub.wake()

    # -- the connection ---------------------------------------------------------------------

    async def start(self, *, wait_seconds: float = 10.0) -> None:
        """Start listening in the background; wait (at most ``wait_seconds``) until the first
        LISTEN is in place. Not listening yet is not fatal: subscribers still poll slowly."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="yuxi-listener")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._listening.wait(), wait_seconds)

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.stats.connected = False

    async def backend_pid(self) -> int | None:
        """The listening session's server pid (tests kill it to prove a reconnect)."""
        conn = self._conn
        return None if conn is None or conn.closed else conn.info.backend_pid

    async def _run(self) -> None:
        backoff = _BACKOFF_FIRST
        first = True
        while True:
            try:
                conn = await self._connect()
            except (psycopg.Error, OSError) as exc:
                _log.warning("listener: cannot connect (%s); retrying in %.1fs", exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX)
                continue
            try:
                async with conn:
                    for channel in CHANNELS:
                        await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                    self._conn = conn
                    self.stats.connected = True
                    if not first:
                        self.stats.reconnects += 1
                    first = False
                    backoff = _BACKOFF_FIRST
                    self._listening.set()
                    # Whatever was sent before this LISTEN is not coming: everyone re-reads.
                    self.wake_all()
                    await self._listen(conn)
            except (psycopg.Error, OSError) as exc:
                _log.warning("listener: connection lost (%s); reconnecting", exc)
            finally:
                self._conn = None
                self.stats.connected = False
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _BACKOFF_MAX)

    async def _listen(self, conn: psycopg.AsyncConnection[object]) -> None:
        async for note in conn.notifies():  # a lost connection raises
            self.dispatch(note.channel, note.payload)
