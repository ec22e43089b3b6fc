"""The trash (issue 36 §1): a deleted thread is listed in its owner's trash for
``YUXI_TRASH_DAYS``, hidden everywhere else, and a restore brings it back active with everything
it had — except memory entries its deletion forgot. Over HTTP too; another user's thread is a 404
that changes nothing; the account export holds trashed threads (with ``deleted_at``)."""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile
from datetime import timedelta

import httpx
import pytest

from tests.support.db_scan import dump_tables
from tests.support.factories import make_run, memory_file, remember
from yuxi.bootstrap import Container
from yuxi.errors import Conflict, NotFound
from yuxi.limits import TRASH_DAYS
from yuxi.services.chat import ThreadDetail


async def _user(c: Container, name: str) -> tuple[str, dict[str, str]]:
    created = await c.services.users.create_user(name)
    await c.services.users.set_memory_enabled(created.uid, True)
    return created.uid, {"Authorization": f"Bearer {created.token}"}


async def _thread_with_messages(c: Container, uid: str, title: str, *texts: str) -> str:
    """A thread holding ``texts`` as user messages (each a run, then cancelled)."""
    thread = (await c.services.chat.create_thread(uid, title=title)).thread_id
    for text in texts:
        run, _ = await c.services.chat.submit(uid, thread, text)
        await c.services.chat.cancel(uid, run.id)
    return thread


def _without_clock(detail: ThreadDetail) -> dict[str, object]:
    shape: dict[str, object] = dataclasses.asdict(detail)
    shape.pop("updated_at")
    return shape


async def test_delete_puts_the_thread_in_the_trash_and_restore_brings_all_of_it_back(
    container: Container,
) -> None:
    chat = container.services.chat
    uid, _ = await _user(container, "owner")
    thread = await _thread_with_messages(container, uid, "茶 tea", "我喜欢乌龙茶", "second")
    before = await chat.get_thread(uid, thread)
    runs_before = await chat.thread_runs(uid, thread)

    assert await chat.delete_thread(uid, thread) is None
    assert thread not in {t.thread_id for t in await chat.list_threads(uid, include_archived=True)}
    with pytest.raises(NotFound):
        await chat.get_thread(uid, thread)
    with pytest.raises(NotFound):
        await chat.submit(uid, thread, "more")
    trash = await chat.trash.list_threads(uid)
    assert trash.trash_days == TRASH_DAYS == 30
    [item] = trash.threads
    assert (item.thread_id, item.title, item.memory_forgotten) == (thread, "茶 tea", False)
    assert item.purge_after - item.deleted_at == timedelta(days=30)

    restored = await chat.trash.restore(uid, thread)
    assert restored.status == "active"
    after = await chat.get_thread(uid, thread)
    assert _without_clock(after) == _without_clock(before)  # every message, as it was
    assert [r.id for r in await chat.thread_runs(uid, thread)] == [r.id for r in runs_before]
    assert (await chat.trash.list_threads(uid)).threads == []
    run, created = await chat.submit(uid, thread, "back again")
    assert created and run.status == "pending"
    with pytest.raises(NotFound):  # no longer in the trash
        await chat.trash.restore(uid, thread)


async def test_deleting_cancels_the_threads_active_run(container: Container) -> None:
    chat = container.services.chat
    uid, _ = await _user(container, "owner")
    thread = (await chat.create_thread(uid)).thread_id
    pending, _ = await chat.submit(uid, thread, "queued")
    running = await make_run(container, uid)  # claimed, live lease
    await chat.delete_thread(uid, thread)
    await chat.delete_thread(uid, running.thread_id)
    assert (await chat.get_run(uid, pending.id)).status == "cancelled"
    still = await chat.get_run(uid, running.run_id)
    assert still.status == "running" and still.cancel_requested  # its worker is told to stop


async def test_another_users_thread_is_not_found_and_nothing_changes(
    container: Container,
) -> None:
    chat = container.services.chat
    owner, _ = await _user(container, "owner")
    other, _ = await _user(container, "other")
    thread = await _thread_with_messages(container, owner, "mine", "secret qzxnotyours")
    await chat.delete_thread(owner, thread)
    before = dump_tables(container.database_url)
    assert (await chat.trash.list_threads(other)).threads == []
    with pytest.raises(NotFound):
        await chat.trash.restore(other, thread)
    with pytest.raises(NotFound):
        await chat.trash.delete_now(other, thread)
    assert dump_tables(container.database_url) == before


async def test_a_thread_deleted_with_its_memory_comes_back_without_it(
    container: Container,
) -> None:
    """Restoring a thread deleted with ``forget_memory`` brings back the thread, not the lines
    the deletion forgot: MEMORY.md stays as the forget left it, and the trash said so."""
    chat = container.services.chat
    uid, _ = await _user(container, "owner")
    thread = (await chat.create_thread(uid, title="t")).thread_id
    run = await make_run(container, uid, thread)
    assert (await remember(container, run, "I drink 乌龙茶 qzxforgot"))["status"] == "updated"
    await container.services.runs.finish(run, "completed")
    forgotten = await chat.delete_thread(uid, thread, forget_memory=True)
    assert forgotten is not None and forgotten.removed == ["I drink 乌龙茶 qzxforgot"]
    after_forget = memory_file(container, uid).read_bytes()
    [item] = (await chat.trash.list_threads(uid)).threads
    assert item.memory_forgotten
    await chat.trash.restore(uid, thread)
    assert memory_file(container, uid).read_bytes() == after_forget
    assert b"qzxforgot" not in after_forget
    assert (await chat.thread_memory(uid, thread)).entries == []


async def test_trash_over_http(container: Container, client: httpx.AsyncClient) -> None:
    uid, auth = await _user(container, "owner")
    _, other = await _user(container, "other")
    thread = await _thread_with_messages(container, uid, "甲", "hello")
    assert (await client.delete(f"/api/v1/threads/{thread}", headers=auth)).status_code == 204

    listed = await client.get("/api/v1/trash", headers=auth)
    assert listed.status_code == 200, listed.text
    body = listed.json()
    assert body["trash_days"] == 30
    assert [t["thread_id"] for t in body["threads"]] == [thread]
    assert {"deleted_at", "purge_after", "memory_forgotten"} <= body["threads"][0].keys()
    assert (await client.get("/api/v1/trash", headers=other)).json()["threads"] == []
    days_only = await client.get("/api/v1/trash?limit=0", headers=auth)  # the delete dialog's
    assert days_only.json() == {"trash_days": 30, "threads": []}
    assert (await client.get("/api/v1/trash?limit=201", headers=auth)).status_code == 422
    assert (await client.get("/api/v1/trash")).status_code == 401

    missing = await client.post(f"/api/v1/trash/{thread}/restore", headers=other)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    restored = await client.post(f"/api/v1/trash/{thread}/restore", headers=auth)
    assert restored.status_code == 200 and restored.json()["status"] == "active"
    assert (await client.get(f"/api/v1/threads/{thread}", headers=auth)).status_code == 200

    await client.delete(f"/api/v1/threads/{thread}", headers=auth)
    assert (await client.delete(f"/api/v1/trash/{thread}", headers=other)).status_code == 404
    assert (await client.delete(f"/api/v1/trash/{thread}", headers=auth)).status_code == 204
    assert (await client.get("/api/v1/trash", headers=auth)).json()["threads"] == []
    gone = await client.post(f"/api/v1/trash/{thread}/restore", headers=auth)
    assert gone.status_code == 404


async def test_delete_now_waits_for_a_live_run(container: Container) -> None:
    """A run still stopping holds its thread: "Delete now" is a 409 that removes nothing."""
    chat = container.services.chat
    uid, _ = await _user(container, "owner")
    run = await make_run(container, uid)
    await chat.delete_thread(uid, run.thread_id)
    before = dump_tables(container.database_url)
    with pytest.raises(Conflict):
        await chat.trash.delete_now(uid, run.thread_id)
    assert dump_tables(container.database_url) == before
    await container.services.runs.finish(run, "cancelled")
    report = await chat.trash.delete_now(uid, run.thread_id)
    assert report.threads == [run.thread_id] and report.rows["agent_runs"] == 1


async def test_the_export_holds_trashed_threads_and_not_purged_ones(
    container: Container,
) -> None:
    chat = container.services.chat
    uid, _ = await _user(container, "owner")
    kept = await _thread_with_messages(container, uid, "kept", "qzxkeptmsg")
    trashed = await _thread_with_messages(container, uid, "trashed", "qzxtrashedmsg")
    purged = await _thread_with_messages(container, uid, "purged", "qzxpurgedmsg")
    await chat.delete_thread(uid, trashed)
    await chat.delete_thread(uid, purged)
    await chat.trash.delete_now(uid, purged)

    out = io.BytesIO()
    await container.services.accounts.export_account(uid, out)
    with zipfile.ZipFile(out) as archive:
        names = set(archive.namelist())
        assert f"threads/{kept}.jsonl" in names and f"threads/{purged}.jsonl" not in names
        first = archive.read(f"threads/{trashed}.jsonl").decode().splitlines()
        everything = b"".join(archive.read(n) for n in names)
    record = json.loads(first[0])["thread"]
    assert record["status"] == "deleted" and record["deleted_at"]
    assert json.loads(first[1])["message"]["content"] == "qzxtrashedmsg"
    assert b"qzxpurgedmsg" not in everything
    assert (
        json.loads(zipfile.ZipFile(out).read(f"threads/{kept}.jsonl").decode().splitlines()[0])[
            "thread"
        ]["deleted_at"]
        is None
    )
