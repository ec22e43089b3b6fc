"""Purging a thread from the trash, proved the way the account deletion is proved
(``test_account_deletion.py``, the same planting and the same whole-database scan).

Two users write markers everywhere (``tests.support.planting.plant``); then one of them gets
one more thread with a marker of its own in its title, messages, tool call inputs and outputs,
run events, a run error, a SubAgent's thread and the LangGraph checkpoints real runs of the
offline model leave, a memory entry it asked for and a file it wrote after an approval. That
thread is deleted, its trash days run out, and it is purged. Then every row of every table
(``bytea`` as raw bytes) is searched: no trace of the thread's marker, its thread ids (its
SubAgent's too) or its run ids remains anywhere; what it asked to remember stays only in the
memory versions (the user's memory, not the thread); every row that is still there is
byte-identical to before, except the memory versions the thread recorded, whose link to it is
cleared and nothing else; every removed row was the thread's; the data dir is untouched.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from tests.support.db_scan import dump_tables, file_hashes, scan_database, scan_files
from tests.support.factories import sql
from tests.support.planting import PlantedThread, owned_by, plant, plant_thread
from yuxi.bootstrap import Container
from yuxi.runtime.worker import Worker

_LINK = ("thread_id", "run_id", "message_id", "tool_call_id")


def _thread_ids(url: str, thread: PlantedThread) -> dict[str, set[Any]]:
    """The purged thread's ids (its SubAgent threads' too), read before the purge."""
    tables = dump_tables(url)
    rows = {name: [row for _, row in tables[name]] for name in tables}
    conversations = {r["id"] for r in rows["conversations"] if r["thread_id"] == thread.thread_id}
    conversations |= {
        r["child_conversation_id"]
        for r in rows["subagent_threads"]
        if r["parent_conversation_id"] in conversations
    }
    thread_ids = {r["thread_id"] for r in rows["conversations"] if r["id"] in conversations}
    runs = {r["id"] for r in rows["agent_runs"] if r["conversation_thread_id"] in thread_ids}
    messages = {r["id"] for r in rows["messages"] if r["conversation_id"] in conversations}
    return {
        "uid": set(),  # nothing of the user as such goes
        "thread_id": thread_ids,
        "run_id": runs,
        "message_id": messages,
        "conversation_id": conversations,
    }


async def test_a_purged_thread_leaves_nothing_and_every_other_row_stays_byte_identical(
    container: Container, worker: Worker
) -> None:
    url, data_dir = container.database_url, container.settings.data_dir
    chat = container.services.chat
    victim = await plant(container, worker, "victim")
    keeper = await plant(container, worker, "keeper")
    doomed = await plant_thread(container, worker, victim.uid, f"qzxdoom{uuid.uuid4().hex[:10]}")
    # Also in the trash, but not due: it stays as it is.
    young = await plant_thread(container, worker, keeper.uid, f"qzxyoung{uuid.uuid4().hex[:8]}")
    await chat.delete_thread(keeper.uid, young.thread_id)

    ids = _thread_ids(url, doomed)
    assert len(ids["thread_id"]) == 2, "the thread and its SubAgent's thread"
    assert ids["run_id"] >= set(doomed.run_ids) and len(ids["message_id"]) > 8
    needles = [doomed.marker, doomed.file_marker, *ids["thread_id"], *ids["run_id"]]
    planted = scan_database(url, [doomed.marker, doomed.memory_marker, doomed.file_marker])
    expected = {
        "conversations",
        "messages",
        "message_search",
        "tool_calls",
        "agent_runs",
        "run_events",
        "checkpoint_blobs",
    }
    assert expected <= planted.tables_with(doomed.marker), planted.hits
    # The interrupted write waits in the checkpointer's pending writes.
    assert "checkpoint_writes" in planted.tables_with(doomed.file_marker), planted.hits
    assert "memory_versions" in planted.tables_with(doomed.memory_marker)
    assert scan_database(url, list(ids["thread_id"])).tables_with(doomed.thread_id) >= {
        "checkpoints",
        "checkpoint_blobs",
        "checkpoint_writes",
        "memory_versions",
    }
    others = [victim.threads[0], keeper.threads[0], young.thread_id]
    views_before = [await chat.get_thread(victim.uid, victim.threads[0])]
    views_before.append(await chat.get_thread(keeper.uid, keeper.threads[0]))

    await chat.delete_thread(victim.uid, doomed.thread_id)
    await sql(
        container,
        "UPDATE conversations SET deleted_at = deleted_at - interval '30 days 1 second' "
        "WHERE thread_id = :t",
        t=doomed.thread_id,
    )
    before = dump_tables(url)
    files_before = file_hashes(data_dir)
    report = await chat.trash.purge_due()
    assert report.threads == [doomed.thread_id]
    assert report.rows["checkpoints"] > 0 and report.rows["conversations"] == 2
    assert report.versions_unlinked >= 1

    after = scan_database(url, [*needles, doomed.memory_marker])
    print(
        f"\n[trash purge scan] tables {after.tables}, rows {after.rows}, needles "
        f"{len(needles)}, hits {sum(after.hits.values())}; purged {report.rows}, "
        f"versions unlinked {report.versions_unlinked}"
    )
    assert after.tables == planted.tables >= 17 and after.rows > 0
    assert set(after.hits) == {("memory_versions", doomed.memory_marker)}, after.hits
    assert file_hashes(data_dir) == files_before  # a purge touches no file
    assert scan_files(data_dir, [doomed.file_marker])  # the file it wrote is the user's

    dump_after = dump_tables(url)
    assert dump_after.keys() == before.keys()
    unlinked = 0
    for table, rows in before.items():
        kept = Counter(text for text, _ in dump_after[table])
        removed = Counter(text for text, _ in rows) - kept
        appeared = kept - Counter(text for text, _ in rows)
        if table == "memory_versions":
            changed = _unlinked_versions(rows, dump_after[table], ids)
            unlinked += changed
            assert sum(appeared.values()) == changed and sum(removed.values()) == changed
            continue
        assert not appeared, f"{table}: a row changed or appeared: {appeared}"
        for text, row in rows:
            if removed[text]:
                assert owned_by(table, row, ids), f"{table}: removed a row not the thread's: {text}"
            elif owned_by(table, row, ids):
                raise AssertionError(f"{table}: a row of the thread is still there: {text}")
    assert unlinked == report.versions_unlinked

    views_after = [
        await chat.get_thread(victim.uid, victim.threads[0]),
        await chat.get_thread(keeper.uid, keeper.threads[0]),
    ]
    assert views_after == views_before
    assert [t.thread_id for t in (await chat.trash.list_threads(keeper.uid)).threads] == [
        young.thread_id
    ]
    assert all(t in {r["thread_id"] for _, r in dump_after["conversations"]} for t in others)


def _unlinked_versions(
    before: list[tuple[str, dict[str, Any]]],
    after: list[tuple[str, dict[str, Any]]],
    ids: dict[str, set[Any]],
) -> int:
    """Memory versions: the same rows, and those that named the thread differ from before in
    their link only (cleared); how many did."""
    now = {row["version_id"]: row for _, row in after}
    assert now.keys() == {row["version_id"] for _, row in before}
    changed = 0
    for _, row in before:
        new = now[row["version_id"]]
        named = row["thread_id"] in ids["thread_id"] or row["run_id"] in ids["run_id"]
        if not named:
            assert new == row, f"memory_versions: another version changed: {row['version_id']}"
            continue
        changed += 1
        assert all(new[key] is None for key in _LINK), new
        assert {k: v for k, v in new.items() if k not in _LINK} == {
            k: v for k, v in row.items() if k not in _LINK
        }
    return changed
