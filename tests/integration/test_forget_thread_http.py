"""Forget with the thread over HTTP (issue 27 §1): ``GET /api/v1/threads/{id}/memory``, ``DELETE
/api/v1/threads/{id}?forget_memory=true`` (200 with what was removed), without the flag (204,
MEMORY.md byte-identical), undo through the memory API, and another user's thread (404, nothing
changed)."""

from __future__ import annotations

import uuid

import httpx

from tests.support.factories import make_run, memory_file, remember, sha256_of
from yuxi.bootstrap import Container


async def _user(c: Container, name: str) -> tuple[str, dict[str, str]]:
    created = await c.services.users.create_user(name)
    await c.services.users.set_memory_enabled(created.uid, True)
    return created.uid, {"Authorization": f"Bearer {created.token}"}


async def _thread_that_wrote(
    c: Container, client: httpx.AsyncClient, uid: str, auth: dict[str, str], text: str
) -> str:
    thread = (await client.post("/api/v1/threads", headers=auth, json={"title": "茶"})).json()
    run = await make_run(c, uid, thread["thread_id"])
    assert (await remember(c, run, text))["status"] == "updated"
    await c.services.runs.finish(run, "completed")
    return str(thread["thread_id"])


async def test_list_delete_with_forget_and_undo(
    container: Container, client: httpx.AsyncClient
) -> None:
    uid, auth = await _user(container, "owner")
    marker = f"我喜欢乌龙茶 {uuid.uuid4().hex[:8]}"
    other = f"keep {uuid.uuid4().hex[:8]}"
    thread = await _thread_that_wrote(container, client, uid, auth, marker)
    await _thread_that_wrote(container, client, uid, auth, other)
    path = memory_file(container, uid)
    before = path.read_bytes()

    listed = await client.get(f"/api/v1/threads/{thread}/memory", headers=auth)
    assert listed.status_code == 200, listed.text
    body = listed.json()
    assert body["thread_id"] == thread
    assert [e["text"] for e in body["entries"]] == [marker]
    assert body["entries"][0]["source"]["thread_title"] == "茶"

    deleted = await client.delete(f"/api/v1/threads/{thread}?forget_memory=true", headers=auth)
    assert deleted.status_code == 200, deleted.text
    result = deleted.json()
    assert result["removed"] == [marker]
    assert result["version"]["kind"] == "forget"
    assert result["version"]["thread_id"] == thread
    assert marker not in path.read_text() and other in path.read_text()
    memory = await client.get("/api/v1/memory", headers=auth)
    assert result["etag"] == memory.headers["ETag"]
    assert (await client.get(f"/api/v1/threads/{thread}", headers=auth)).status_code == 404
    gone = await client.get(f"/api/v1/threads/{thread}/memory", headers=auth)
    assert gone.status_code == 404

    version_id = result["version"]["version_id"]
    undone = await client.post(f"/api/v1/memory/versions/{version_id}/undo", headers=auth)
    assert undone.status_code == 200, undone.text
    assert path.read_bytes() == before


async def test_delete_without_the_flag_is_204_and_memory_byte_identical(
    container: Container, client: httpx.AsyncClient
) -> None:
    uid, auth = await _user(container, "owner")
    thread = await _thread_that_wrote(container, client, uid, auth, f"stay {uuid.uuid4().hex}")
    path = memory_file(container, uid)
    digest = sha256_of(path)
    archived = await client.post(f"/api/v1/threads/{thread}/archive", headers=auth)
    assert archived.status_code == 200
    assert sha256_of(path) == digest
    for query in ("", "?forget_memory=false"):
        fresh = await _thread_that_wrote(container, client, uid, auth, f"x {uuid.uuid4().hex}")
        digest = sha256_of(path)
        deleted = await client.delete(f"/api/v1/threads/{fresh}{query}", headers=auth)
        assert deleted.status_code == 204, deleted.text
        assert deleted.content == b""
        assert sha256_of(path) == digest


async def test_another_users_thread_is_404_and_memory_unchanged(
    container: Container, client: httpx.AsyncClient
) -> None:
    uid, auth = await _user(container, "owner")
    stranger, stranger_auth = await _user(container, "stranger")
    marker = f"secret-thread {uuid.uuid4().hex}"
    thread = await _thread_that_wrote(container, client, uid, auth, marker)
    digests = (sha256_of(memory_file(container, uid)), sha256_of(memory_file(container, stranger)))
    peek = await client.get(f"/api/v1/threads/{thread}/memory", headers=stranger_auth)
    assert peek.status_code == 404 and marker not in peek.text
    for query in ("?forget_memory=true", ""):
        refused = await client.delete(f"/api/v1/threads/{thread}{query}", headers=stranger_auth)
        assert refused.status_code == 404, refused.text
    assert digests == (
        sha256_of(memory_file(container, uid)),
        sha256_of(memory_file(container, stranger)),
    )
    assert (await client.get(f"/api/v1/threads/{thread}", headers=auth)).status_code == 200
    assert (await client.get(f"/api/v1/threads/{thread}/memory", headers={})).status_code == 401
