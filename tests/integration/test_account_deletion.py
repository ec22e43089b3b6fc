"""Deleting an account, the hard way, on a real PostgreSQL with real runs of the offline model.

Two users write unique markers everywhere a user can write (their name, thread titles, messages,
tool call inputs and outputs, memory and its versions, workspace files, a run error, a
SubAgent's thread, the LangGraph checkpoints those runs leave). One of them is deleted. Then
every row of every table (``bytea`` columns as raw bytes) and every file of the data dir is
searched: nothing of the deleted user remains, not their markers and not their uid, and every
row and file of the other user is byte-identical to before.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from tests.support.db_scan import dump_tables, file_hashes, scan_database, scan_files
from tests.support.factories import make_run, remember
from tests.support.planting import Planted, owned_by, plant
from yuxi.bootstrap import Container, build_worker, open_agent_runtime
from yuxi.errors import InvalidArgument, NotFound, Unauthorized, UnauthorizedRun
from yuxi.runtime.worker import Worker
from yuxi.services.accounts import AccountService
from yuxi.services.runs.service import LeaseLost
from yuxi.workspace import workspace_dirname


def _ids(url: str, p: Planted) -> dict[str, set[Any]]:
    """The deleted user's ids, read before the deletion, to attribute each removed row."""
    tables = dump_tables(url)

    def column(table: str, key: str, where: str, values: set[Any]) -> set[Any]:
        return {row[key] for _, row in tables[table] if row[where] in values}

    conversations = column("conversations", "id", "uid", {p.uid})
    return {
        "uid": {p.uid},
        "thread_id": column("conversations", "thread_id", "uid", {p.uid}),
        "run_id": column("agent_runs", "id", "uid", {p.uid}),
        "message_id": column("messages", "id", "conversation_id", conversations),
        "conversation_id": conversations,
    }


@pytest.fixture
async def two_users(container: Container, worker: Worker) -> tuple[Planted, Planted]:
    victim = await plant(container, worker, "victim")
    keeper = await plant(container, worker, "keeper")
    # A run still queued when the deletion starts: it is cancelled, then deleted.
    queued = await container.services.chat.create_thread(victim.uid)
    await container.services.chat.submit(victim.uid, queued.thread_id, f"{victim.marker}queued")
    return victim, keeper


async def test_deleting_an_account_leaves_nothing_of_it_and_the_other_user_untouched(
    container: Container, two_users: tuple[Planted, Planted]
) -> None:
    victim, keeper = two_users
    url, data_dir = container.database_url, container.settings.data_dir
    before = dump_tables(url)
    files_before = file_hashes(data_dir)
    ids = _ids(url, victim)
    keeper_ids = _ids(url, keeper)

    planted = scan_database(url, [victim.marker, keeper.marker, victim.uid])
    # The scan sees the markers where they were written, binary checkpoints included.
    expected = {
        "users",
        "api_tokens",
        "conversations",
        "messages",
        "message_search",
        "tool_calls",
        "agent_runs",
        "run_events",
        "memory_versions",
        "checkpoint_blobs",
        "checkpoint_writes",
    }
    assert expected <= planted.tables_with(victim.marker), planted.hits
    assert expected <= planted.tables_with(keeper.marker)
    assert {"login_codes", "user_config"} <= planted.tables_with(victim.uid)
    assert scan_files(data_dir, [victim.marker])

    deleted = await container.services.accounts.delete_account(victim.uid)
    assert deleted.tokens_revoked == 2 and deleted.files >= 5
    assert deleted.rows["users"] == 1 and deleted.rows["checkpoints"] > 0

    after = scan_database(url, victim.needles)
    print(
        f"\n[account deletion scan] tables {after.tables}, rows {after.rows}, "
        f"needles {len(victim.needles)}, hits {sum(after.hits.values())}; "
        f"deleted {deleted.rows}, files {deleted.files}"
    )
    assert after.tables == planted.tables >= 17 and after.rows > 0
    assert not after.hits, after.hits
    assert scan_files(data_dir, victim.needles) == []
    assert not container.workspace(victim.uid).directory.exists()

    dump_after = dump_tables(url)
    assert dump_after.keys() == before.keys()
    for table, rows in before.items():
        kept = Counter(text for text, _ in dump_after[table])
        assert not kept - Counter(text for text, _ in rows), f"{table}: a row changed or appeared"
        removed = Counter(text for text, _ in rows) - kept
        for text, row in rows:
            if removed[text]:
                assert owned_by(table, row, ids), f"{table}: removed a row not theirs: {text}"
            if owned_by(table, row, keeper_ids):
                assert kept[text], f"{table}: the other user's row is gone: {text}"
    files_after = file_hashes(data_dir)
    gone = files_before.keys() - files_after.keys()
    assert {k: files_before[k] for k in files_after} == files_after  # nothing else changed
    assert gone and all(workspace_dirname(victim.uid) in path for path in gone)
    assert any(keeper.marker in path for path in files_after)

    # The deleted user's credential is dead, and the other user goes on.
    with pytest.raises(Unauthorized):
        await container.services.users.authenticate(victim.token)
    assert await container.services.users.authenticate(keeper.token) == keeper.uid
    with pytest.raises(NotFound):
        await container.services.accounts.delete_account(victim.uid)


async def test_a_wrong_confirmation_deletes_nothing(container: Container) -> None:
    created = await container.services.users.create_user("ada 艾达")
    before = dump_tables(container.database_url)
    files = file_hashes(container.settings.data_dir)
    for wrong in ("", "ada", "ada 艾达 ", "ADA 艾达"):
        with pytest.raises(InvalidArgument):
            await container.services.accounts.delete_account(created.uid, confirm=wrong)
    assert dump_tables(container.database_url) == before
    assert file_hashes(container.settings.data_dir) == files
    deleted = await container.services.accounts.delete_account(created.uid, confirm="ada 艾达")
    assert deleted.rows["users"] == 1


async def test_a_run_caught_mid_write_never_writes_again(container: Container) -> None:
    """A run whose worker never answers the cancel: after the settle bound the account is
    deleted anyway, and every write that run still tries is refused — no memory, no file, no
    event, and the workspace is not brought back."""
    created = await container.services.users.create_user("mid")
    uid = created.uid
    await container.services.users.set_memory_enabled(uid, True)
    run = await make_run(container, uid)  # claimed, live lease, a worker that never beats
    assert (await remember(container, run, "before the deletion"))["status"] == "updated"
    accounts = AccountService(
        container.uow,
        container.workspace,
        container.services.memory_versions,
        settle_seconds=0.3,
    )
    deleted = await accounts.delete_account(uid)
    assert deleted.runs_stopped == 1 and deleted.runs_unsettled == 1
    assert deleted.rows["memory_versions"] == 1

    refused = await remember(container, run, "after the deletion")
    assert refused["status"] == "error" and refused["code"] == "unauthorized_run", refused
    with pytest.raises(UnauthorizedRun):
        async with container.services.runs.holding_lease(run):
            pytest.fail("a deleted run's lease was held")
    with pytest.raises(LeaseLost):
        await container.services.runs.record_event(run, "run_status", {"status": "running"})
    assert not container.workspace(uid).directory.exists()
    assert not scan_database(container.database_url, [uid]).hits


async def test_a_run_executing_when_its_account_is_deleted_is_stopped_first(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real run of the offline model, inside a tool call (its messages recorded), when the
    deletion starts: its worker is told to cancel, the deletion waits for it to stop — the
    graph saves its checkpoint as it exits — and then nothing of the user remains, that
    checkpoint included."""
    created = await container.services.users.create_user("busy")
    uid = created.uid
    await container.services.users.set_memory_enabled(uid, True)
    inside = asyncio.Event()

    async def hang(**_: Any) -> Any:
        inside.set()
        await asyncio.Event().wait()

    monkeypatch.setattr(container.services.lookback, "search_thread_messages", hang)
    container.settings = container.settings.model_copy(update={"heartbeat_seconds": 0.2})
    chat = container.services.chat
    thread = (await chat.create_thread(uid)).thread_id
    await chat.submit(uid, thread, "search history: qzxbusymarker")
    async with open_agent_runtime(container) as runtime:
        worker = build_worker(container, runtime)
        working = asyncio.create_task(worker.run_once())
        await asyncio.wait_for(inside.wait(), 30)
        assert scan_database(container.database_url, ["qzxbusymarker"]).tables_with(
            "qzxbusymarker"
        ) >= {"messages"}
        deleted = await container.services.accounts.delete_account(uid)
        assert await asyncio.wait_for(working, 30)
    assert deleted.runs_stopped == 1 and deleted.runs_unsettled == 0
    assert deleted.rows["checkpoints"] > 0
    assert not scan_database(container.database_url, [uid, "qzxbusymarker", thread]).hits
    assert scan_files(container.settings.data_dir, [uid, workspace_dirname(uid)]) == []


async def test_a_file_write_for_a_deleted_account_brings_nothing_back(
    container: Container,
) -> None:
    """A request that authenticated before the deletion and writes after it: refused, and no
    directory, file or lock file named after the user appears."""
    created = await container.services.users.create_user("gone")
    uid = created.uid
    await container.services.files.write_file(uid, "a.md", b"qzxgonefile")
    await container.services.accounts.delete_account(uid)
    files = file_hashes(container.settings.data_dir)
    for path in ("a.md", "agents/MEMORY.md"):
        with pytest.raises(NotFound):
            await container.services.files.write_file(uid, path, b"qzxgoneagain", if_match="*")
        with pytest.raises(NotFound):
            await container.services.files.read_file(uid, path)
    with pytest.raises(NotFound):
        await container.services.files.list_files(uid)
    with pytest.raises(NotFound):  # past the file API: the memory lock's own check
        await container.services.memory.write_memory_file(uid, b"qzxgoneagain", if_match="*")
    assert file_hashes(container.settings.data_dir) == files
    assert scan_files(container.settings.data_dir, [uid[2:], workspace_dirname(uid)]) == []
