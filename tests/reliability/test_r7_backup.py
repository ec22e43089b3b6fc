"""R7 backup and restore: ``yuxi backup`` while writers run, restored into a fresh embedded
PostgreSQL and an empty data dir, compared user by user.

Two kinds of users:

* **quiet** users are written before the backup and never during it: after the restore every
  row of theirs (user, tokens, memory versions with provenance, threads, messages, tool calls,
  runs, checkpoints) and every workspace file is identical, every token authenticates, and one
  of them has a run waiting for approval that is approved on the restored copy and finishes;
* **busy** users are written *during* the backup, by real leased runs (``remember:`` through a
  worker and the offline model) and by the owner's own memory edits and file writes. Their
  restored state is a consistent earlier state: MEMORY.md is exactly the file of the newest
  restored version (a write is in wholly — file and version — or not at all), the restored
  versions and messages are the source's up to that point, byte for byte.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from tests.reliability.support import TIMEOUT, report, scale
from tests.support.backup import compare_users, user_rows, workspace_hashes
from tests.support.factories import make_user, memory_file
from tests.support.waiting import until
from yuxi.bootstrap import Container, bootstrap, build_worker, open_agent_runtime
from yuxi.settings import Settings
from yuxi.vocabulary import SETTLED_RUN_STATUSES
from yuxi.workspace.filesystem import MEMORY_PATH

pytestmark = [pytest.mark.pg, pytest.mark.slow, TIMEOUT]

MARK = "往返标记"


async def _quiet_user(c: Container, worker: object, n: int) -> tuple[str, str]:
    """A user with memory written by a run and by the owner, a thread, a file and a token."""
    issued = await c.services.users.create_user(f"quiet-{n}-{uuid.uuid4().hex[:6]}")
    uid = issued.uid
    await c.services.users.set_memory_enabled(uid, True)
    chat = c.services.chat
    thread = (await chat.create_thread(uid, title=f"安静 {n}")).thread_id
    run, _ = await chat.submit(uid, thread, f"remember: {MARK} quiet {n}")
    assert await worker.run_once()  # type: ignore[attr-defined]
    assert (await chat.get_run(uid, run.id)).status == "completed"
    current = memory_file(c, uid).read_bytes()
    await c.services.memory.write_memory_file(uid, current + f"- owner note {n}\n".encode())
    await c.workspace(uid).write_file("notes/quiet.txt", f"quiet {n} 笔记".encode())
    return uid, issued.token


async def _interrupted_run(c: Container, worker: object, uid: str) -> str:
    """A run of ``uid`` paused on an approval (a tainted ``remember_memory``)."""
    chat = c.services.chat
    old = (await chat.create_thread(uid, title="old")).thread_id
    planted, _ = await chat.submit(uid, old, f"remember that the code word is {MARK}-approve")
    assert await worker.run_once()  # type: ignore[attr-defined]
    assert (await chat.get_run(uid, planted.id)).status == "completed"
    thread = (await chat.create_thread(uid)).thread_id
    run, _ = await chat.submit(uid, thread, f"read thread: {old}\nremember: approved {MARK}")
    assert await worker.run_once()  # type: ignore[attr-defined]
    assert (await chat.get_run(uid, run.id)).status == "interrupted"
    return run.id


class Writers:
    """Busy users written continuously until stopped: runs through a worker, owner edits."""

    def __init__(self, c: Container, worker: object, uids: list[str]) -> None:
        self.c, self.worker, self.uids = c, worker, uids
        self.stop = asyncio.Event()
        self.writes = 0

    async def run_writer(self, uid: str) -> None:
        chat = self.c.services.chat
        thread = (await chat.create_thread(uid, title="busy")).thread_id
        n = 0
        while not self.stop.is_set():
            n += 1
            await chat.submit(uid, thread, f"remember: busy {uid[:6]} fact {n}")
            await self.worker.run_once()  # type: ignore[attr-defined]
            self.writes += 1

    async def owner_writer(self, uid: str) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            current = memory_file(self.c, uid).read_bytes() if n > 1 else b""
            await self.c.services.memory.write_memory_file(uid, current + f"- edit {n}\n".encode())
            async with self.c.workspace(uid).locked():
                await self.c.workspace(uid).write_file("notes/busy.txt", f"edit {n}".encode())
            self.writes += 1
            await asyncio.sleep(0)


async def test_backup_under_writers_restores_into_a_fresh_cluster(
    container: Container, tmp_path: Path
) -> None:
    quiet_n, busy_n = scale(3, 20), scale(2, 10)
    async with open_agent_runtime(container) as runtime:
        worker = build_worker(container, runtime, name="r7-source")
        quiet = [await _quiet_user(container, worker, n) for n in range(quiet_n)]
        waiting_run = await _interrupted_run(container, worker, quiet[0][0])
        busy = [await make_user(container, name=f"busy-{n}") for n in range(busy_n)]
        for uid in busy:
            await container.services.memory.write_memory_file(uid, b"- start\n")

        writers = Writers(container, worker, busy)
        tasks = [asyncio.create_task(writers.run_writer(busy[0]))]
        tasks += [asyncio.create_task(writers.owner_writer(uid)) for uid in busy]
        await until("writers under way", lambda: writers.writes >= 2 * busy_n)
        out = tmp_path / "backup.tar"
        before = writers.writes
        started = time.monotonic()
        made = await container.services.backup.create(out)
        backup_seconds = time.monotonic() - started
        during = writers.writes - before
        writers.stop.set()
        for task in tasks:
            await task

    assert during > 0, "no write landed while the backup ran"
    # No URL: a new embedded cluster. Outside pytest's tmp dir (as the session's own server is):
    # another pytest session resets that dir to 0700, which the server's system user (as root)
    # could then no longer reach.
    fresh = Path(tempfile.mkdtemp(prefix="yuxi-r7-"))
    settings = Settings(data_dir=fresh / "data")
    restored = await bootstrap(settings)
    try:
        started = time.monotonic()
        await restored.services.restore.restore(out)
        restore_seconds = time.monotonic() - started
        uids = [uid for uid, _ in quiet]
        await compare_users(container, restored, uids)
        for uid, token in quiet:
            assert await restored.services.users.authenticate(token) == uid
        for uid in busy:
            await _assert_consistent_earlier_state(container, restored, uid)

        async with open_agent_runtime(restored) as runtime:
            worker = build_worker(restored, runtime, name="r7-restored")
            chat = restored.services.chat
            resume, created = await chat.resume(quiet[0][0], waiting_run, "approve")
            assert created
            # A busy user's run submitted just before the snapshot is restored pending too, and
            # older than the resume: the worker claims it first. Each turn must claim a run.
            for _ in range(busy_n + 2):
                assert await worker.run_once()
                done = await chat.get_run(quiet[0][0], resume.id)
                if done.status in SETTLED_RUN_STATUSES:
                    break
            assert done.status == "completed", done.error_message
        assert f"approved {MARK}" in memory_file(restored, quiet[0][0]).read_text()
    finally:
        await restored.aclose(stop_embedded=True)
        shutil.rmtree(fresh, ignore_errors=True)

    report(
        "R7 backup round trip",
        quiet_users=quiet_n,
        busy_users=busy_n,
        writes_during_backup=during,
        memory_from_snapshot=made.memory_from_snapshot,
        archive_bytes=made.bytes,
        rows=sum(made.tables.values()),
        backup_seconds=round(backup_seconds, 2),
        restore_seconds=round(restore_seconds, 2),
        identical_quiet_users=quiet_n,
    )


async def _assert_consistent_earlier_state(
    source: Container, restored: Container, uid: str
) -> None:
    then, now = await user_rows(restored, uid), await user_rows(source, uid)
    versions = then["memory_versions"]
    assert versions, uid
    newest = versions[-1]
    # Wholly or not at all: the restored file is exactly the newest restored version.
    data = memory_file(restored, uid).read_bytes()
    assert hashlib.sha256(data).hexdigest() == newest["sha256"], uid
    assert data.decode() == newest["content"]
    # Everything restored is the source's own history up to that point, byte for byte.
    by_seq = {v["seq"]: v for v in now["memory_versions"]}
    for version in versions:
        if version["seq"] in by_seq:  # (retention may have pruned it in the source since)
            assert by_seq[version["seq"]] == version
    source_messages = {m["id"]: m for m in now["messages"]}
    for message in then["messages"]:
        assert source_messages[message["id"]] == message
    assert MEMORY_PATH in workspace_hashes(restored, uid)
    assert then["users"] == now["users"] and then["api_tokens"] == now["api_tokens"]
