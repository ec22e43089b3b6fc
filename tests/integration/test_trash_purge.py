"""The trash's purge (issue 36 §1) on a real PostgreSQL: only threads whose ``YUXI_TRASH_DAYS``
are over go, in bounded batches; a second pass finds nothing; two purgers at once take disjoint
threads and together purge each exactly once; a thread whose run holds a live lease waits;
``YUXI_TRASH_DAYS=0`` purges at the deletion; memory versions lose their link to the purged
thread and keep their text; ``yuxi threads purge`` and the worker pool's job run the same
purge."""

from __future__ import annotations

import asyncio
import re
from collections import Counter

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from tests.support.db_scan import scan_database
from tests.support.factories import make_run, memory_file, remember, sql
from yuxi.bootstrap import Container, bootstrap
from yuxi.cli import app
from yuxi.repositories.memory import lock_user_memory
from yuxi.runtime.trash_purge import purge_trash_periodically
from yuxi.services.chat import ChatService, PurgeReport
from yuxi.settings import Settings


async def _user(c: Container, name: str = "owner") -> str:
    created = await c.services.users.create_user(name)
    await c.services.users.set_memory_enabled(created.uid, True)
    return created.uid


async def _deleted_thread(c: Container, uid: str, text: str, *, days_ago: int = 31) -> str:
    """A thread with one message (its run cancelled by the deletion), deleted ``days_ago``."""
    chat = c.services.chat
    thread = (await chat.create_thread(uid, title=text)).thread_id
    await chat.submit(uid, thread, text)
    await chat.delete_thread(uid, thread)
    await _age(c, thread, days_ago)
    return thread


async def _age(c: Container, thread: str, days: int) -> None:
    await sql(
        c,
        "UPDATE conversations SET deleted_at = deleted_at - make_interval(days => :d) "
        "WHERE thread_id = :t",
        d=days,
        t=thread,
    )


def _remaining(c: Container, needles: list[str]) -> Counter[tuple[str, str]]:
    return scan_database(c.database_url, needles).hits


async def test_only_threads_past_their_days_are_purged_and_a_second_pass_finds_nothing(
    container: Container,
) -> None:
    uid = await _user(container)
    old = await _deleted_thread(container, uid, "qzxold", days_ago=31)
    young = await _deleted_thread(container, uid, "qzxyoung", days_ago=29)
    alive = (await container.services.chat.create_thread(uid, title="qzxalive")).thread_id
    await container.services.chat.submit(uid, alive, "qzxalive")

    report = await container.services.chat.trash.purge_due()
    assert report.threads == [old] and report.waiting == 0
    assert report.rows["conversations"] == 1 and report.rows["messages"] == 1
    assert report.rows["agent_runs"] == 1 and report.rows["run_events"] == 2
    assert report.rows["message_search"] == 1
    assert not _remaining(container, ["qzxold", old])
    assert _remaining(container, ["qzxyoung"]) and _remaining(container, ["qzxalive"])
    assert [
        t.thread_id for t in (await container.services.chat.trash.list_threads(uid)).threads
    ] == [young]

    again = await container.services.chat.trash.purge_due()
    assert again == PurgeReport(rows=again.rows) and not any(again.rows.values())


async def test_batches_are_bounded_and_every_due_thread_goes(container: Container) -> None:
    uid = await _user(container)
    threads = [await _deleted_thread(container, uid, f"qzxbatch{i}") for i in range(7)]
    report = await container.services.chat.trash.purge_due(batch=3)
    assert sorted(report.threads) == sorted(threads)
    assert report.rows["conversations"] == 7
    assert not _remaining(container, ["qzxbatch"])


async def test_two_purgers_at_once_purge_each_thread_exactly_once(
    container: Container, settings: Settings
) -> None:
    """Two processes' worth of purgers (two containers, two pools) over the same trash, small
    batches: together they purge every due thread, neither purges one the other did, and
    neither fails."""
    uids = [await _user(container, f"u{i}") for i in range(2)]
    threads = [await _deleted_thread(container, uids[i % 2], f"qzxrace{i:02d}") for i in range(24)]
    other = await bootstrap(settings)
    try:
        first, second = await asyncio.gather(
            container.services.chat.trash.purge_due(batch=2),
            other.services.chat.trash.purge_due(batch=2),
        )
    finally:
        await other.aclose()
    assert not set(first.threads) & set(second.threads)
    assert sorted(first.threads + second.threads) == sorted(threads)
    assert first.rows["conversations"] + second.rows["conversations"] == 24
    assert first.rows["messages"] + second.rows["messages"] == 24
    assert not _remaining(container, ["qzxrace"])


async def test_a_purger_skips_a_thread_another_transaction_holds(container: Container) -> None:
    """``SKIP LOCKED``: a thread whose row another transaction holds (a restore, another
    purger) is neither waited for nor purged; the others are, and it goes at the next pass."""
    uid = await _user(container)
    held = await _deleted_thread(container, uid, "qzxheld")
    free = await _deleted_thread(container, uid, "qzxfree")
    async with container.session_factory() as session, session.begin():
        await session.execute(
            text("SELECT id FROM conversations WHERE thread_id = :t FOR UPDATE"), {"t": held}
        )
        report = await asyncio.wait_for(container.services.chat.trash.purge_due(), 30)
        assert report.threads == [free]
    assert _remaining(container, ["qzxheld"]) and not _remaining(container, ["qzxfree"])
    assert (await container.services.chat.trash.purge_due()).threads == [held]
    assert not _remaining(container, ["qzxheld"])


async def test_a_purge_takes_the_owners_memory_lock_before_any_row(
    container: Container,
) -> None:
    """The order every memory writer and the account deletion use (the memory lock, then
    rows): while someone holds the owner's memory lock, a purge waiting for it holds no row of
    the thread, so that someone can still lock the row (no deadlock); once let go, it purges."""
    uid = await _user(container)
    thread = await _deleted_thread(container, uid, "qzxorder")
    async with container.session_factory() as session, session.begin():
        await session.execute(lock_user_memory(uid))
        purge = asyncio.create_task(container.services.chat.trash.purge_due())
        await asyncio.sleep(0.5)  # long enough to reach the memory lock and wait there
        assert not purge.done()
        row = await session.execute(
            text("SELECT id FROM conversations WHERE thread_id = :t FOR UPDATE NOWAIT"),
            {"t": thread},
        )
        assert row.scalar_one()
    report = await asyncio.wait_for(purge, 30)
    assert report.threads == [thread]
    assert not _remaining(container, ["qzxorder"])


async def test_a_thread_whose_run_holds_a_live_lease_is_never_purged(
    container: Container,
) -> None:
    chat = container.services.chat
    uid = await _user(container)
    run = await make_run(container, uid)  # claimed by a worker that still beats
    await sql(
        container,
        "INSERT INTO messages (conversation_id, uid, role, content, run_id) "
        "SELECT id, uid, 'user', 'qzxleased', :r FROM conversations WHERE thread_id = :t",
        r=run.run_id,
        t=run.thread_id,
    )
    await chat.delete_thread(uid, run.thread_id)
    await _age(container, run.thread_id, 365)

    for _ in range(2):
        report = await chat.trash.purge_due()
        assert report.threads == [] and report.waiting == 1
    assert _remaining(container, ["qzxleased"])
    # The lease runs out (its worker died): the run can write nothing more, so it goes.
    await sql(
        container,
        "UPDATE agent_runs SET lease_expires_at = now() - interval '1 second' WHERE id = :r",
        r=run.run_id,
    )
    report = await chat.trash.purge_due()
    assert report.threads == [run.thread_id] and report.waiting == 0
    assert not _remaining(container, ["qzxleased", run.thread_id, run.run_id])


async def test_zero_days_purges_at_the_deletion_unless_a_run_is_still_live(
    container: Container,
) -> None:
    uid = await _user(container)
    chat = ChatService(container.uow, container.workspace, trash_days=0)
    thread = (await chat.create_thread(uid, title="qzxzero")).thread_id
    await chat.submit(uid, thread, "qzxzero message")
    await chat.delete_thread(uid, thread)
    assert not _remaining(container, ["qzxzero", thread])

    run = await make_run(container, uid)
    await sql(
        container,
        "UPDATE conversations SET title = 'qzxzerolive' WHERE thread_id = :t",
        t=run.thread_id,
    )
    await chat.delete_thread(uid, run.thread_id)
    assert _remaining(container, ["qzxzerolive"])  # its run is still stopping
    await container.services.runs.finish(run, "cancelled")
    report = await chat.trash.purge_due()
    assert report.threads == [run.thread_id]
    assert not _remaining(container, ["qzxzerolive"])


async def test_memory_versions_lose_the_link_and_keep_the_memory(container: Container) -> None:
    """A version a purged thread's run recorded stays (it is the memory's history) and so does
    MEMORY.md; its thread, run, asking message and tool call are cleared, and the entry's
    source reads as an agent's from a thread no longer available. Nothing of the thread blocks
    the purge."""
    chat = container.services.chat
    uid = await _user(container)
    thread = (await chat.create_thread(uid, title="qzxprov")).thread_id
    asked, _ = await chat.submit(uid, thread, "remember qzxprovmsg")
    await chat.cancel(uid, asked.id)
    run = await make_run(container, uid, thread)
    assert (await remember(container, run, "I like 乌龙茶 qzxprovmem"))["status"] == "updated"
    await container.services.runs.finish(run, "completed")
    file_before = memory_file(container, uid).read_bytes()
    [version] = (await container.services.memory_versions.list_versions(uid)).versions
    assert version.thread_id == thread and version.run_id == run.run_id
    assert version.message_id is not None

    await chat.delete_thread(uid, thread)
    await _age(container, thread, 31)
    report = await chat.trash.purge_due()
    assert report.threads == [thread] and report.versions_unlinked == 1

    [after] = (await container.services.memory_versions.list_versions(uid)).versions
    assert after.version_id == version.version_id and after.actor == "agent"
    assert (after.thread_id, after.run_id, after.message_id, after.tool_call_id) == (None,) * 4
    assert after.source_available is False
    assert memory_file(container, uid).read_bytes() == file_before
    [entry] = (await container.services.memory_versions.view(uid)).entries
    assert entry.source is not None and entry.source.thread_id is None
    assert not _remaining(container, ["qzxprovmsg", thread, run.run_id])
    assert set(dict(_remaining(container, ["qzxprovmem"]))) == {("memory_versions", "qzxprovmem")}


async def test_the_worker_pools_job_purges_what_is_due(container: Container) -> None:
    uid = await _user(container)
    thread = await _deleted_thread(container, uid, "qzxjob")
    stop = asyncio.Event()
    job = asyncio.create_task(
        purge_trash_periodically(container.services.chat.trash, stop, interval=0.05)
    )
    for _ in range(200):
        if not _remaining(container, ["qzxjob"]):
            break
        await asyncio.sleep(0.05)
    stop.set()
    reports = await asyncio.wait_for(job, 10)
    assert [r.threads for r in reports] == [[thread]]
    assert not _remaining(container, ["qzxjob", thread])


@pytest.fixture
def env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("YUXI_DATABASE_URL", settings.database_url or "")
    monkeypatch.setenv("YUXI_DATA_DIR", str(settings.data_dir))
    return settings


def test_yuxi_threads_purge_prints_what_it_purged(env: Settings) -> None:
    async def setup() -> tuple[str, str]:
        c = await bootstrap(env)
        try:
            uid = await _user(c)
            return await _deleted_thread(c, uid, "qzxcli"), await _deleted_thread(
                c, uid, "qzxclikept", days_ago=1
            )
        finally:
            await c.aclose()

    purged, kept = asyncio.run(setup())
    runner = CliRunner()
    result = runner.invoke(app, ["threads", "purge"])
    assert result.exit_code == 0, result.output
    assert f"purged 1 thread(s): {purged}" in result.output
    assert re.search(r"rows: .*messages 1.*conversations 1", result.output), result.output
    assert kept not in result.output
    again = runner.invoke(app, ["threads", "purge"])
    assert again.exit_code == 0 and "nothing to purge (threads stay in the trash 30 day(s))" in (
        again.output
    )
    zero = runner.invoke(app, ["threads", "purge"], env={"YUXI_TRASH_DAYS": "0"})
    assert zero.exit_code == 0 and f"purged 1 thread(s): {kept}" in zero.output
    bad = runner.invoke(app, ["threads", "purge"], env={"YUXI_TRASH_DAYS": "-1"})
    assert bad.exit_code != 0
