"""remember_memory on real PostgreSQL: authorization, the switch, limits, semantics, storage."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.factories import (
    as_kwargs,
    make_run,
    make_thread,
    make_user,
    memory_file,
    remember,
    set_memory,
    sha256_of,
    sql,
    tool_payload,
)
from yuxi.bootstrap import Container
from yuxi.limits import MEMORY_FILE_MAX_BYTES

CJK = "记"  # 3 UTF-8 bytes


async def _remember(
    c: Container, ident: object, content: object, replaces: object = None
) -> dict[str, Any]:
    return await remember(c, ident, content, replaces)  # type: ignore[arg-type]


async def test_add_creates_then_appends_with_line_numbers(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    first = await _remember(container, run, "  I drink oolong tea  ")
    assert first.pop("version_id").startswith("mv_")
    assert first == {
        "status": "updated",
        "path": "/agents/MEMORY.md",
        "size": len(b"I drink oolong tea\n"),
        "start_line": 1,
        "end_line": 1,
        "quota_remaining": {"writes": 4, "bytes": 8192 - len(b"I drink oolong tea")},
    }
    second = await _remember(container, run, "Lives in 杭州\nPrefers 中文")
    text = memory_file(container, uid).read_text("utf-8")
    assert text == "I drink oolong tea\n\nLives in 杭州\nPrefers 中文\n"
    assert (second["start_line"], second["end_line"]) == (3, 4)
    assert second["size"] == len(text.encode())


async def test_duplicate_whole_lines_are_unchanged_and_not_written(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    await _remember(container, run, "likes   green tea")
    path = memory_file(container, uid)
    before, mtime = sha256_of(path), path.stat().st_mtime_ns
    again = await _remember(container, run, "likes green   tea")
    assert again["status"] == "unchanged" and again["start_line"] == 1
    assert sha256_of(path) == before and path.stat().st_mtime_ns == mtime


async def test_fragment_of_a_longer_line_is_not_a_duplicate(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    await _remember(container, run, "I drink oolong tea every morning")
    result = await _remember(container, run, "oolong tea")
    assert result["status"] == "updated"
    assert memory_file(container, uid).read_text().endswith("\n\noolong tea\n")


async def test_correct_replaces_the_unique_exact_text(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    await _remember(container, run, "line one")
    await _remember(container, run, "I drink oolong tea")
    result = await _remember(container, run, "pu-erh", replaces="oolong")
    assert result["status"] == "updated" and result["start_line"] == 3
    assert memory_file(container, uid).read_text() == "line one\n\nI drink pu-erh tea\n"


# 0 or ≥ 2 matches of `replaces` → memory_conflict with the file unchanged: proved for the real
# service and the fake alike by test_memory_contract.py::test_replace_conflicts_leave_the_file.


async def test_retry_after_lost_reply_converges(container: Container) -> None:
    """Publish succeeded but the reply was lost: a retried add is `unchanged`, a retried
    replace is a conflict (the old text is gone) — and the file is the same either way."""
    uid = await make_user(container)
    run = await make_run(container, uid)
    assert (await _remember(container, run, "fact A"))["status"] == "updated"
    assert (await _remember(container, run, "fact A"))["status"] == "unchanged"
    assert (await _remember(container, run, "fact B", replaces="fact A"))["status"] == "updated"
    before = sha256_of(memory_file(container, uid))
    retry = await _remember(container, run, "fact B", replaces="fact A")
    assert retry["code"] == "memory_conflict"
    assert sha256_of(memory_file(container, uid)) == before


# -- limits, in UTF-8 bytes -------------------------------------------------------------------


@pytest.mark.parametrize("field", ["content", "replaces"])
async def test_4096_bytes_ok_4097_refused_with_cjk(container: Container, field: str) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    ok = CJK * 1365 + "a"  # 4096 bytes
    too_big = CJK * 1365 + "ab"  # 4097 bytes
    assert len(ok.encode()) == 4096 and len(too_big.encode()) == 4097
    path = memory_file(container, uid)
    if field == "content":
        assert (await _remember(container, run, ok))["status"] == "updated"
        before = sha256_of(path)
        refused = await _remember(container, run, too_big)
    else:
        path.write_text(ok + "\n", "utf-8")
        assert (await _remember(container, run, "short", replaces=ok))["status"] == "updated"
        path.write_text(too_big + "\n", "utf-8")
        before = sha256_of(path)
        refused = await _remember(container, run, "short", replaces=too_big)
    assert refused["status"] == "error" and refused["code"] == "invalid_argument"
    assert "4097" in refused["error"]
    assert sha256_of(path) == before


@pytest.mark.parametrize(
    ("content", "replaces"),
    [
        ("", None),
        ("   \n\t ", None),
        ("bad \ud800 surrogate", None),
        ("nul \x00 byte", None),
        (42, None),
        ("fine", ""),
        ("fine", "  "),
        ("fine", "x\udfff"),
        ("fine", "a\x00"),
        ("fine", ["list"]),
    ],
    ids=[
        "empty",
        "blank",
        "lone-surrogate",
        "nul",
        "not-a-string",
        "replaces-empty",
        "replaces-blank",
        "replaces-surrogate",
        "replaces-nul",
        "replaces-list",
    ],
)
async def test_bad_arguments_are_refused_before_any_io(
    container: Container, content: object, replaces: object
) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    path = memory_file(container, uid)
    path.write_text("existing\n")
    before = sha256_of(path)
    result = await _remember(container, run, content, replaces)
    assert result["status"] == "error" and result["code"] == "invalid_argument"
    assert sha256_of(path) == before


async def test_source_file_over_128_kib_is_refused(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    path = memory_file(container, uid)
    path.write_bytes(b"x" * (MEMORY_FILE_MAX_BYTES - 5) + b"MARK\n")  # exactly 128 KiB: ok
    ok = await _remember(container, run, "MARQ", replaces="MARK")
    assert ok["status"] == "updated" and ok["size"] == MEMORY_FILE_MAX_BYTES
    path.write_bytes(b"y" * (MEMORY_FILE_MAX_BYTES + 1))
    before = sha256_of(path)
    result = await _remember(container, run, "small")
    assert result["code"] == "memory_too_large"
    assert sha256_of(path) == before


async def test_result_over_128_kib_is_refused(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    path = memory_file(container, uid)
    # base.rstrip() + "\n\n" + content + "\n": base of N-4 bytes + 2-byte content = N + 1 bytes.
    path.write_bytes(b"z" * (MEMORY_FILE_MAX_BYTES - 4))
    before = sha256_of(path)
    result = await _remember(container, run, "ab")
    assert result["code"] == "memory_too_large"
    assert sha256_of(path) == before
    exact = await _remember(container, run, "a")
    assert exact["status"] == "updated" and exact["size"] == MEMORY_FILE_MAX_BYTES


async def test_invalid_utf8_file_is_refused_not_rewritten(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    path = memory_file(container, uid)
    path.write_bytes(b"ok line\n\xff\xfe broken\n")
    before = sha256_of(path)
    result = await _remember(container, run, "new fact")
    assert result["code"] == "memory_invalid_encoding"
    assert sha256_of(path) == before


async def test_missing_file_and_agents_dir_are_recreated(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    path = memory_file(container, uid)
    shutil.rmtree(path.parent)
    result = await _remember(container, run, "fresh start")
    assert result["status"] == "updated" and result["start_line"] == 1
    assert path.read_text() == "fresh start\n"
    assert (path.stat().st_mode & 0o777) == 0o600
    assert (path.parent.stat().st_mode & 0o777) == 0o700


# -- authorization: every refusal leaves the bytes alone --------------------------------------


async def _assert_refused(c: Container, uid: str, kwargs: dict[str, Any], code: str) -> None:
    path = memory_file(c, uid)
    path.write_text("original\n")
    before = sha256_of(path)
    result = await remember(c, kwargs, "poison")
    assert result["status"] == "error", result
    assert result["code"] == code, result
    assert sha256_of(path) == before
    assert "poison" not in path.read_text()


async def test_forged_worker_id_is_refused(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    kw = as_kwargs(run) | {"worker_id": "w_" + "0" * 32}
    await _assert_refused(container, uid, kw, "unauthorized_run")


@pytest.mark.parametrize("field", ["uid", "thread_id", "run_id", "request_id", "worker_id"])
async def test_missing_identity_value_is_refused(container: Container, field: str) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    await _assert_refused(container, uid, as_kwargs(run) | {field: ""}, "unauthorized_run")


async def test_another_users_run_is_refused(container: Container) -> None:
    victim = await make_user(container)
    attacker = await make_user(container)
    attacker_run = await make_run(container, attacker)
    # The attacker's real, live run, pointed at the victim's uid.
    await _assert_refused(
        container, victim, as_kwargs(attacker_run) | {"uid": victim}, "unauthorized_run"
    )


async def test_other_thread_is_refused(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    other = await make_thread(container, uid)
    await _assert_refused(container, uid, as_kwargs(run) | {"thread_id": other}, "unauthorized_run")


async def test_other_request_is_refused(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    await _assert_refused(
        container, uid, as_kwargs(run) | {"request_id": "someone-else"}, "unauthorized_run"
    )


async def test_subagent_run_is_refused(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid, run_type="subagent")
    await _assert_refused(container, uid, as_kwargs(run), "unauthorized_run")


async def test_resume_run_may_write(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid, run_type="resume")
    assert (await _remember(container, run, "from a resume"))["status"] == "updated"


@pytest.mark.parametrize("status", ["pending", "completed", "failed", "cancelled", "interrupted"])
async def test_non_running_run_is_refused(container: Container, status: str) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    await sql(
        container, "UPDATE agent_runs SET status = :s WHERE id = :id", s=status, id=run.run_id
    )
    await _assert_refused(container, uid, as_kwargs(run), "unauthorized_run")


async def test_cancel_requested_run_is_refused(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    await sql(
        container, "UPDATE agent_runs SET cancel_requested = true WHERE id = :id", id=run.run_id
    )
    await _assert_refused(container, uid, as_kwargs(run), "unauthorized_run")


async def test_expired_lease_by_database_clock_is_refused(container: Container) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    await sql(
        container,
        "UPDATE agent_runs SET lease_expires_at = now() - interval '1 millisecond' WHERE id = :id",
        id=run.run_id,
    )
    await _assert_refused(container, uid, as_kwargs(run), "unauthorized_run")


async def test_app_clock_is_not_consulted(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lease alive by the database clock stays valid even if this process's clock is a day
    ahead — and (previous test) an expired one is refused whatever the app thinks."""
    uid = await make_user(container)
    run = await make_run(container, uid, lease_seconds=600)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 86400)
    assert (await _remember(container, run, "clock skew is fine"))["status"] == "updated"


async def test_switch_off_between_run_start_and_write(container: Container) -> None:
    uid = await make_user(container, memory=True)
    run = await make_run(container, uid)
    await set_memory(container, uid, False)
    await _assert_refused(container, uid, as_kwargs(run), "memory_disabled")


async def test_reclaimed_run_refuses_the_previous_worker(container: Container) -> None:
    """Ownership changed (lease expired, reconciled, new run claimed): old worker is out."""
    from yuxi.repositories.runs.agent_run_repository import AgentRunRepository

    uid = await make_user(container)
    run = await make_run(container, uid)
    await sql(
        container,
        "UPDATE agent_runs SET lease_expires_at = now() - interval '1 second' WHERE id = :id",
        id=run.run_id,
    )
    async with container.session_factory() as s, s.begin():
        assert await AgentRunRepository(s).reconcile_expired() == [run.run_id]
    await _assert_refused(container, uid, as_kwargs(run), "unauthorized_run")


# -- storage failures -------------------------------------------------------------------------


async def test_publish_on_a_full_disk_is_storage_full_and_keeps_old_bytes(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid = await make_user(container)
    run = await make_run(container, uid)
    await _remember(container, run, "kept")
    path = memory_file(container, uid)
    before = sha256_of(path)

    def broken_rename(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "rename", broken_rename)
    result = await _remember(container, run, "lost?")
    monkeypatch.undo()
    assert result["code"] == "storage_full"
    assert sha256_of(path) == before
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


async def test_database_unavailable_is_storage_unavailable(
    container: Container, tmp_path: Path
) -> None:
    """No database, no write: never a lock-free fallback."""
    from yuxi.db.engine import create_engine, create_session_factory
    from yuxi.services.memory.service import MemoryService
    from yuxi.services.unit_of_work import unit_of_work_factory

    uid = await make_user(container)
    run = await make_run(container, uid)
    path = memory_file(container, uid)
    before = sha256_of(path)
    dead = create_engine("postgresql://postgres@127.0.0.1:1/none")
    service = MemoryService(
        unit_of_work_factory(create_session_factory(dead)), container.workspace_root
    )
    result = await tool_payload(lambda: service.remember_memory(run, "unlocked write"))
    await dead.dispose()
    assert result["code"] == "storage_unavailable"
    assert sha256_of(path) == before


async def test_terminated_connection_mid_lock_is_storage_unavailable(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The backend holding the lock is killed before publish → the write is abandoned."""
    from sqlalchemy import text as ms_text

    from yuxi.repositories.memory import MemoryGate

    uid = await make_user(container)
    run = await make_run(container, uid)
    path = memory_file(container, uid)
    path.write_text("before\n")
    before = sha256_of(path)
    original = MemoryGate.lock
    killed: list[int] = []

    async def kill_own_backend(self: MemoryGate, identity: Any) -> Any:
        authorization = await original(self, identity)
        pid = (await self.session.execute(ms_text("SELECT pg_backend_pid()"))).scalar_one()
        async with container.engine.connect() as other:
            await other.execute(ms_text(f"SELECT pg_terminate_backend({int(pid)})"))
            await other.commit()
        killed.append(pid)
        return authorization

    monkeypatch.setattr(MemoryGate, "lock", kill_own_backend)
    result = await _remember(container, run, "after the kill")
    monkeypatch.undo()
    assert killed, "the gate was not the one patched"
    assert result["code"] == "storage_unavailable"
    assert sha256_of(path) == before
    # and the service recovers on the next call
    assert (await _remember(container, run, "recovered"))["status"] == "updated"


async def test_commit_failure_after_publish_reports_the_truth(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file was published under both locks; if only ending the transaction fails, the
    result says `updated` (it did change), not `storage_unavailable`."""
    from sqlalchemy.exc import OperationalError

    from yuxi.services.unit_of_work import UnitOfWork

    uid = await make_user(container)
    run = await make_run(container, uid)
    real_exit = UnitOfWork.__aexit__
    failed: list[bool] = []

    async def failing_exit(self, *exc_info):  # type: ignore[no-untyped-def]
        await real_exit(self, *exc_info)
        failed.append(True)
        raise OperationalError("COMMIT", {}, Exception("connection lost at commit"))

    monkeypatch.setattr(UnitOfWork, "__aexit__", failing_exit)
    result = await _remember(container, run, "published then commit failed")
    monkeypatch.undo()
    assert failed, "the agent's unit of work was not the one patched"
    assert result["status"] == "updated", result
    assert "published then commit failed" in memory_file(container, uid).read_text()
    again = await _remember(container, run, "never published")
    assert again["status"] == "updated"
