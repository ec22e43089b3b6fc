"""LISTEN/NOTIFY: workers and waiters are woken by notifications, a lost one only delays, and a
payload is an id that is never trusted (``yuxi.db.notifications``, ``yuxi.runtime.worker``).

The safety-net poll is set to an hour wherever a test proves a wake-up came from a
notification: then nothing else could have made the run complete in the test's time.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable

import psycopg
import pytest

from tests.support.factories import make_user
from tests.support.waiting import until
from yuxi.bootstrap import Container, build_worker, open_agent_runtime, open_notifications
from yuxi.db.notifications import (
    RUN_CANCEL,
    RUN_EVENTS,
    RUN_PENDING,
    TOKENS_REVOKED,
    Notifications,
)
from yuxi.runtime.executor import RunExecutor
from yuxi.runtime.worker import Worker, run_pool
from yuxi.services.runs.service import ClaimedRun
from yuxi.vocabulary import SETTLED_RUN_STATUSES

pytestmark = pytest.mark.pg

NEVER = 3600.0  # a safety-net poll that never fires within a test
SETTLE_SECONDS = 30.0  # only keeps a broken build from hanging the suite


@contextlib.asynccontextmanager
async def running(
    container: Container, hub: Notifications | None, *, poll_seconds: float
) -> AsyncIterator[Worker]:
    """One worker in the background until the block ends."""
    async with open_agent_runtime(container) as runtime:
        worker = build_worker(container, runtime, name="notified", notifications=hub)
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run_forever(stop, poll_seconds=poll_seconds))
        try:
            # Its first look found nothing: it waits for a notification (or its poll) now.
            await _until("the worker to be idle", lambda: worker.idle)
            yield worker
        finally:
            stop.set()
            await asyncio.wait_for(task, 10)


async def _until(what: str, check: Callable[[], object]) -> None:
    await until(what, check, within=SETTLE_SECONDS, poll=0.02)


async def _settled(container: Container, uid: str, run_id: str) -> str:
    chat = container.services.chat

    async def done() -> bool:
        return (await chat.get_run(uid, run_id)).status in SETTLED_RUN_STATUSES

    await _until("the run to settle", done)
    return (await chat.get_run(uid, run_id)).status


async def _submit(container: Container, uid: str, text: str = "hello") -> str:
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, text)
    return run.id


async def _notify(container: Container, channel: str, payload: str) -> None:
    """A NOTIFY from another session, as anyone who can connect could send."""
    async with await psycopg.AsyncConnection.connect(container.database_url) as conn:
        await conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))
        await conn.commit()


async def _all_delivered(container: Container, hub: Notifications) -> None:
    """Return once ``hub`` has dispatched every notification committed before this call.

    PostgreSQL delivers notifications to a listener in commit order and the hub dispatches
    them in that order, so once a marker sent now has reached its subscriber, anything an
    earlier commit notified has been dispatched too. A test that shows that something was
    *not* notified waits here first, instead of sleeping and hoping."""
    marker = f"marker-{uuid.uuid4().hex}"
    with hub.subscribe(RUN_CANCEL, marker) as seen:
        await _notify(container, RUN_CANCEL, marker)
        assert await seen.wait(SETTLE_SECONDS), "the marker notification never arrived"


async def test_a_pending_run_wakes_an_idle_worker_without_its_poll(container: Container) -> None:
    uid = await make_user(container)
    async with (
        open_notifications(container) as hub,
        running(container, hub, poll_seconds=NEVER) as worker,
    ):
        assert worker.stats.woken == 0
        run_id = await _submit(container, uid)
        assert await _settled(container, uid, run_id) == "completed"
        assert worker.stats.woken >= 1  # the notification woke it ...
        assert worker.stats.polled == 0  # ... not its (hour-long) poll
        assert worker.stats.claimed == 1


async def test_a_run_costs_one_claim_and_a_freed_slot_does_not_look_in_vain(
    container: Container,
) -> None:
    """Runs one at a time: each is claimed by the one claim its notification prompts, and the
    claim (seeing nobody else pending) makes the worker wait again, so neither the look after
    a claim nor a slot freed by a finished run sends a claim that finds nothing."""
    uid = await make_user(container)
    async with (
        open_notifications(container) as hub,
        running(container, hub, poll_seconds=NEVER) as worker,
    ):
        missed = worker.stats.missed  # the look at start-up found nothing
        for i in range(3):
            run_id = await _submit(container, uid, f"hello {i}")
            assert await _settled(container, uid, run_id) == "completed"
            await _until("the worker to be idle again", lambda: worker.idle)
        assert worker.stats.claimed == 3
        assert worker.stats.missed == missed


async def test_runs_already_pending_are_claimed_back_to_back(container: Container) -> None:
    """Three runs pending when the worker starts: each claim sees the others pending, so the
    worker claims the next at once, and the last claim (nobody else pending) lets it rest:
    no claim finds nothing."""
    uid = await make_user(container)
    run_ids = [await _submit(container, uid, f"hello {i}") for i in range(3)]
    async with (
        open_notifications(container) as hub,
        running(container, hub, poll_seconds=NEVER) as worker,
    ):
        for run_id in run_ids:
            assert await _settled(container, uid, run_id) == "completed"
        assert worker.stats.claimed == 3
        assert worker.stats.missed == 0
        assert worker.stats.woken == 0  # no notification was needed


async def test_without_a_listener_the_safety_poll_still_runs_the_work(
    container: Container,
) -> None:
    uid = await make_user(container)
    async with running(container, None, poll_seconds=0.3) as worker:
        run_id = await _submit(container, uid)
        assert await _settled(container, uid, run_id) == "completed"
        assert worker.stats.woken == 0 and worker.stats.polled >= 1


async def test_a_notification_lost_while_the_listener_is_down_only_delays(
    container: Container,
) -> None:
    """The listener's session is killed; a run is submitted while it cannot reconnect (its
    notification is lost for good); once it reconnects it wakes everyone, and the run runs."""
    gate = asyncio.Event()
    gate.set()
    connects = 0

    async def connect() -> psycopg.AsyncConnection[object]:
        nonlocal connects
        await gate.wait()
        connects += 1
        conn: psycopg.AsyncConnection[object] = await psycopg.AsyncConnection.connect(
            container.database_url, autocommit=True
        )
        return conn

    hub = Notifications(container.database_url, keepalive_seconds=NEVER, connect=connect)
    await hub.start()
    try:
        uid = await make_user(container)
        async with running(container, hub, poll_seconds=NEVER) as worker:
            pid = await hub.backend_pid()
            assert pid is not None and hub.stats.connected
            gate.clear()
            async with await psycopg.AsyncConnection.connect(container.database_url) as admin:
                await admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                await admin.commit()
            await _until("the listener to notice the kill", lambda: not hub.stats.connected)
            async with open_notifications(container) as witness:
                with witness.subscribe(RUN_PENDING) as sent:
                    run_id = await _submit(container, uid)
                    # The run's notification was really sent: a listener that was up heard it.
                    assert await sent.wait(SETTLE_SECONDS)
            # Ours was down (its reconnect waits at the gate), so it was lost for good ...
            assert not hub.stats.connected and connects == 1
            chat = container.services.chat
            assert (await chat.get_run(uid, run_id)).status == "pending"  # ... nobody heard it
            assert worker.idle and worker.stats.woken == 0 and worker.stats.claimed == 0
            gate.set()
            assert await _settled(container, uid, run_id) == "completed"
            assert hub.stats.reconnects == 1 and connects == 2
            assert worker.stats.polled == 0  # the reconnect's wake-up, not the poll
    finally:
        await hub.aclose()


async def test_forged_and_foreign_payloads_wake_nobody_else_and_never_break_the_listener(
    container: Container,
) -> None:
    async with open_notifications(container) as hub:
        mine = hub.subscribe(RUN_EVENTS, "run-a")
        pending = hub.subscribe(RUN_PENDING)
        revoked = hub.subscribe(TOKENS_REVOKED)
        for payload in ("", "x" * 7000, "run-a; DROP TABLE agent_runs", '{"run_id": "run-a"}'):
            await _notify(container, RUN_EVENTS, payload)
        await _notify(container, RUN_EVENTS, "run-b")  # somebody else's run
        await _notify(container, "yuxi_not_ours", "run-a")  # a channel we do not listen on
        await _all_delivered(container, hub)  # the marker is the sixth one received
        assert hub.stats.received == 6  # the foreign channel's never came: nobody listens
        assert hub.stats.ignored == 4
        assert not await mine.wait(0)
        assert not await pending.wait(0) and not await revoked.wait(0)
        # still listening, and a real id wakes exactly its subscriber
        await _notify(container, RUN_EVENTS, "run-a")
        assert await mine.wait(SETTLE_SECONDS)
        assert hub.stats.connected and hub.stats.reconnects == 0
        with pytest.raises(ValueError):
            hub.subscribe("yuxi_not_ours")


async def test_a_forged_pending_notification_makes_a_worker_look_and_find_nothing(
    container: Container,
) -> None:
    """A wake-up is only a reason to look: the claim reads the table, nothing else."""
    async with (
        open_notifications(container) as hub,
        running(container, hub, poll_seconds=NEVER) as worker,
    ):
        await _notify(container, RUN_PENDING, "00000000-0000-0000-0000-000000000000")
        # Woken, then idle again: ``woken`` counts before the look and ``idle`` is set only
        # after it, so both together prove that the claim ran.
        await _until("a look for work", lambda: worker.stats.woken >= 1 and worker.idle)
        assert worker.stats.claimed == 0


async def test_writes_notify_the_ids_they_touched(container: Container) -> None:
    """The pending run, each event, a revocation: each notifies its id when it commits."""
    users = container.services.users
    issued = await users.create_user("nia")
    async with open_notifications(container) as hub:
        pending = hub.subscribe(RUN_PENDING)
        run_id = await _submit(container, issued.uid)
        assert await pending.wait(SETTLE_SECONDS)
        events = hub.subscribe(RUN_EVENTS, run_id)
        cancels = hub.subscribe(RUN_CANCEL, run_id)
        await container.services.chat.cancel(issued.uid, run_id)  # pending → cancelled event
        assert await events.wait(SETTLE_SECONDS)
        await _all_delivered(container, hub)
        assert not await cancels.wait(0)  # a pending run has no worker to tell
        revoked = hub.subscribe(TOKENS_REVOKED, issued.uid)
        assert await users.revoke_tokens(issued.uid)
        assert await revoked.wait(SETTLE_SECONDS)
        await _all_delivered(container, hub)
        assert not await pending.wait(0)  # a cancel or a revocation wakes no worker


async def test_a_cancel_request_reaches_the_running_worker_at_once(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The heartbeat is an hour apart; the cancel notification makes it beat now."""
    started = asyncio.Event()

    async def forever(self: RunExecutor, claimed: ClaimedRun) -> None:
        started.set()
        await asyncio.sleep(NEVER)

    monkeypatch.setattr(RunExecutor, "execute", forever)
    container.settings.heartbeat_seconds = NEVER
    container.settings.lease_seconds = NEVER
    uid = await make_user(container)
    async with (
        open_notifications(container) as hub,
        running(container, hub, poll_seconds=NEVER),
    ):
        run_id = await _submit(container, uid)
        await asyncio.wait_for(started.wait(), SETTLE_SECONDS)
        await container.services.chat.cancel(uid, run_id)
        assert await _settled(container, uid, run_id) == "cancelled"


async def test_the_pool_safety_net_runs_the_work_when_no_notification_comes(
    container: Container,
) -> None:
    """A listener that never gets to LISTEN: every notification is lost. The pool's one
    safety poll (reconcile + one idle worker's look) still runs each run, and a worker that
    found work wakes its sibling for the next."""
    never = asyncio.Event()

    async def connect() -> psycopg.AsyncConnection[object]:
        await never.wait()
        raise AssertionError("unreachable")

    hub = Notifications(container.database_url, keepalive_seconds=NEVER, connect=connect)
    await hub.start(wait_seconds=0)
    uid = await make_user(container)
    try:
        async with open_agent_runtime(container) as runtime:
            workers = [
                build_worker(container, runtime, name=f"pool-{i}", notifications=hub)
                for i in range(2)
            ]
            stop = asyncio.Event()
            pool = asyncio.create_task(run_pool(workers, stop, notifications=hub, poll_seconds=0.3))
            try:
                run_ids = [await _submit(container, uid, f"hello {i}") for i in range(3)]
                for run_id in run_ids:
                    assert await _settled(container, uid, run_id) == "completed"
            finally:
                stop.set()
                await asyncio.wait_for(pool, 10)
        assert not hub.stats.connected and hub.stats.received == 0
        assert sum(w.stats.claimed for w in workers) == 3
        assert all(w.stats.polled == 0 for w in workers)  # nobody polls on its own
    finally:
        await hub.aclose()
