"""``GET /api/v1/me/export`` and ``DELETE /api/v1/me`` through HTTP (the app in process) on a
real PostgreSQL: the zip's entries and contents, tenancy, the confirmation rule, and that an
export's memory stays bounded however large the account is."""

from __future__ import annotations

import io
import json
import tempfile
import tracemalloc
import uuid
import zipfile
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.support.db_scan import dump_tables, file_hashes
from tests.support.factories import make_thread, sql
from yuxi.api.app import create_app
from yuxi.bootstrap import Container
from yuxi.runtime.worker import Worker
from yuxi.services.accounts import ACCOUNT_EXPORT_FORMAT
from yuxi.services.memory import EXPORT_FORMAT


@pytest.fixture
async def client(container: Container) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(container, workers=0)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://yuxi.test") as http:
        yield http


async def _user(c: Container, worker: Worker, role: str) -> tuple[str, dict[str, str], str]:
    """A user with memory, a remembered line, a file and a second thread; all marked."""
    marker = f"qzx{role}{uuid.uuid4().hex[:10]}"
    created = await c.services.users.create_user(f"{role} 用户")
    uid, auth = created.uid, {"Authorization": f"Bearer {created.token}"}
    await c.services.users.set_memory_enabled(uid, True)
    chat = c.services.chat
    thread = (await chat.create_thread(uid, title=f"{marker}title")).thread_id
    run, _ = await chat.submit(uid, thread, f"remember: {marker}memory 乌龙茶")
    assert await worker.run_once()
    assert (await chat.get_run(uid, run.id)).status == "completed"
    await chat.create_thread(uid)
    await c.services.files.write_file(uid, "docs/notes.md", f"{marker}file".encode())
    return uid, auth, marker


def _entries(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.testzip() is None
        return {name: zf.read(name) for name in zf.namelist()}


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode().splitlines()]


async def test_export_holds_everything_of_the_caller_and_nothing_of_anyone_else(
    client: httpx.AsyncClient, container: Container, worker: Worker
) -> None:
    uid, auth, marker = await _user(container, worker, "owner")
    other_uid, _, other_marker = await _user(container, worker, "other")

    response = await client.get("/api/v1/me/export", headers=auth)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/zip"
    assert "attachment" in response.headers["content-disposition"]
    entries = _entries(response.content)

    threads = [t.thread_id for t in await container.services.chat.list_threads(uid)]
    assert len(threads) == 2
    assert set(entries) == {
        "account.json",
        "memory/MEMORY.md",
        "memory/export.json",
        "runs.jsonl",
        *(f"threads/{t}.jsonl" for t in threads),
        "workspace/agents/AGENTS.md",
        "workspace/agents/MEMORY.md",
        "workspace/agents/USER.md",
        "workspace/docs/notes.md",
    }
    manifest = json.loads(entries["account.json"])
    assert manifest["format"] == ACCOUNT_EXPORT_FORMAT and manifest["version"] == 1
    assert manifest["user"]["uid"] == uid and manifest["memory_enabled"] is True
    assert manifest["counts"] == {
        "memory_versions": 1,
        "threads": 2,
        "messages": 4,  # the user's message, the tool call, its result, the reply
        "tool_calls": 1,
        "runs": 1,
        "files": 4,
    }
    assert sorted(manifest["entries"]) == sorted(entries)

    memory = json.loads(entries["memory/export.json"])
    assert memory["format"] == EXPORT_FORMAT and memory["uid"] == uid
    assert f"{marker}memory 乌龙茶" in memory["content"]
    assert memory["versions"] and memory["versions"][0]["thread_id"] in threads
    assert entries["memory/MEMORY.md"] == entries["workspace/agents/MEMORY.md"]

    marked = next(t for t in threads if f"{marker}title".encode() in entries[f"threads/{t}.jsonl"])
    records = _lines(entries[f"threads/{marked}.jsonl"])
    assert records[0]["thread"]["title"] == f"{marker}title"
    calls = [c for r in records[1:] for c in r["message"]["tool_calls"]]
    assert [c["name"] for c in calls] == ["remember_memory"]
    assert marker in json.dumps(calls[0]["input"], ensure_ascii=False)
    assert calls[0]["output"] and calls[0]["status"] == "success"

    (run,) = _lines(entries["runs.jsonl"])
    assert run["status"] == "completed" and run["usage"]["model_calls"] >= 1
    assert entries["workspace/docs/notes.md"] == f"{marker}file".encode()

    everything = b"".join(entries.values())
    assert marker.encode() in everything
    for foreign in (other_marker, other_uid):
        assert foreign.encode() not in everything


async def test_export_needs_a_token(client: httpx.AsyncClient) -> None:
    assert (await client.get("/api/v1/me/export")).status_code == 401


async def test_delete_me_needs_the_exact_name_and_deletes_nothing_otherwise(
    client: httpx.AsyncClient, container: Container
) -> None:
    created = await container.services.users.create_user("张 三")
    auth = {"Authorization": f"Bearer {created.token}"}
    await container.services.files.write_file(created.uid, "a.md", b"keep me")
    before = dump_tables(container.database_url)
    files = file_hashes(container.settings.data_dir)

    refusals: list[tuple[Any, int]] = [
        (None, 422),  # no body
        ({}, 422),  # no confirm
        ({"confirm": 1}, 422),
        ({"confirm": "张 三", "also": 1}, 422),
        ({"confirm": ""}, 400),
        ({"confirm": "张三"}, 400),
        ({"confirm": " 张 三"}, 400),
        ({"confirm": "x" * 201}, 422),
    ]
    for body, status in refusals:
        response = await client.request("DELETE", "/api/v1/me", headers=auth, json=body)
        assert response.status_code == status, (body, response.text)
        if status == 400:
            assert response.json()["error"]["code"] == "invalid_argument"
    assert dump_tables(container.database_url) == before
    assert file_hashes(container.settings.data_dir) == files
    assert (await client.get("/api/v1/me", headers=auth)).status_code == 200

    response = await client.request("DELETE", "/api/v1/me", headers=auth, json={"confirm": "张 三"})
    assert response.status_code == 200, response.text
    deleted = response.json()["deleted"]
    assert deleted["uid"] == created.uid and deleted["rows"]["users"] == 1
    assert deleted["tokens_revoked"] == 1 and deleted["files"] == 4
    assert (await client.get("/api/v1/me", headers=auth)).status_code == 401
    assert not container.workspace(created.uid).directory.exists()


async def _generated_account(c: Container, messages: int, size: int) -> tuple[str, int]:
    """A user with ``messages`` messages of ``size`` bytes over 4 threads (inserted by SQL),
    each thread longer than one page of the export."""
    created = await c.services.users.create_user(f"big {messages}")
    threads = [await make_thread(c, created.uid) for _ in range(4)]
    for thread in threads:
        await sql(
            c,
            "INSERT INTO messages (conversation_id, uid, role, content)"
            " SELECT (SELECT id FROM conversations WHERE thread_id = :t), :uid,"
            " CASE WHEN g % 2 = 0 THEN 'user' ELSE 'assistant' END,"
            " g || ' ' || repeat(md5(g::text), :reps)"
            " FROM generate_series(1, :n) g",
            t=thread,
            uid=created.uid,
            reps=size // 32,
            n=messages // len(threads),
        )
    return created.uid, messages * size


async def _export_peak(c: Container, uid: str) -> tuple[int, int]:
    """(peak bytes Python allocated while exporting, the zip's size)."""
    with tempfile.TemporaryFile() as out:
        tracemalloc.start()
        try:
            await c.services.accounts.export_account(uid, out)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return peak, out.tell()


async def test_export_memory_stays_bounded_as_the_account_grows(container: Container) -> None:
    small_uid, small_bytes = await _generated_account(container, 4_000, 1_024)
    large_uid, large_bytes = await _generated_account(container, 16_000, 1_024)
    small_peak, small_zip = await _export_peak(container, small_uid)
    large_peak, large_zip = await _export_peak(container, large_uid)
    print(
        f"\n[account export] {small_bytes / 2**20:.1f} MiB of messages: peak "
        f"{small_peak / 2**20:.1f} MiB, zip {small_zip / 2**20:.2f} MiB; "
        f"{large_bytes / 2**20:.1f} MiB: peak {large_peak / 2**20:.1f} MiB, "
        f"zip {large_zip / 2**20:.2f} MiB"
    )
    # Four times the data, not four times the memory: one page is held at a time.
    assert large_peak < small_peak * 1.5
    assert large_peak < large_bytes / 4
