"""The owner's memory API on real PostgreSQL, through HTTP (the app in process, no workers):
the entry view with sources and lint, versions with diffs, restore (If-Match), undo, tenancy,
and that all of it works while memory is off."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.support.factories import make_asked_run, memory_file, remember, set_memory, sha256_of
from yuxi.api.app import create_app
from yuxi.bootstrap import Container
from yuxi.workspace.filesystem import etag_for

EMPTY_SHA = hashlib.sha256(b"").hexdigest()
SOURCE_KEYS = {
    "actor",
    "version_id",
    "kind",
    "at",
    "thread_id",
    "message_id",
    "run_id",
    "thread_title",
    "source_available",
}
VERSION_KEYS = {
    "version_id",
    "created_at",
    "actor",
    "kind",
    "run_id",
    "thread_id",
    "message_id",
    "tool_call_id",
    "target_version_id",
    "sha256",
    "size",
    "parent_sha256",
    "thread_title",
    "source_available",
}


class Api:
    def __init__(self, client: httpx.AsyncClient, container: Container) -> None:
        self.client = client
        self.container = container

    async def user(self, name: str = "owner", *, memory: bool = True) -> tuple[str, dict[str, str]]:
        created = await self.container.services.users.create_user(name)
        await self.container.services.users.set_memory_enabled(created.uid, memory)
        return created.uid, {"Authorization": f"Bearer {created.token}"}

    async def get(self, path: str, auth: dict[str, str]) -> httpx.Response:
        return await self.client.get(path, headers=auth)

    async def post(self, path: str, auth: dict[str, str], **headers: str) -> httpx.Response:
        return await self.client.post(path, headers={**auth, **headers})

    async def put_file(self, auth: dict[str, str], text: str) -> httpx.Response:
        """Replace MEMORY.md the way a client must: If-Match the ETag it just read."""
        path = "/api/v1/workspace/files/agents/MEMORY.md"
        current = await self.client.get(path, headers=auth)
        return await self.client.put(
            path,
            content=text.encode(),
            headers={
                **auth,
                "Content-Type": "text/plain; charset=utf-8",
                "If-Match": current.headers["ETag"],
            },
        )


@pytest.fixture
async def api(container: Container) -> AsyncIterator[Api]:
    app = create_app(container, workers=0)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://yuxi.test") as client:
        yield Api(client, container)


async def _versions(api: Api, auth: dict[str, str]) -> list[dict[str, Any]]:
    response = await api.get("/api/v1/memory/versions", auth)
    assert response.status_code == 200, response.text
    versions: list[dict[str, Any]] = response.json()["versions"]
    return versions


async def test_entries_carry_their_source_and_lint_while_memory_is_off(
    api: Api, container: Container
) -> None:
    uid, auth = await api.user()
    run, message_id = await make_asked_run(container, uid, "remember: 我喜欢乌龙茶", title="茶")
    added = await remember(container, run, "我喜欢乌龙茶")
    assert added["status"] == "updated"
    text = memory_file(container, uid).read_text() + "\n- edited by hand\n"
    assert (await api.put_file(auth, text)).status_code == 204
    await set_memory(container, uid, False)

    response = await api.get("/api/v1/memory", auth)
    assert response.status_code == 200, response.text
    body = response.json()
    data = memory_file(container, uid).read_bytes()
    assert body["etag"] == etag_for(data) == response.headers["ETag"]
    assert body["size"] == len(data)
    assert (body["file_limit_bytes"], body["prompt_window_bytes"]) == (131072, 24576)
    assert body["enabled"] is False
    assert body["lint"] == []
    first, second = body["entries"]
    assert {k: first[k] for k in ("index", "text", "start_line", "end_line", "bytes")} == {
        "index": 0,
        "text": "我喜欢乌龙茶",
        "start_line": 1,
        "end_line": 1,
        "bytes": len("我喜欢乌龙茶".encode()),
    }
    assert first["in_prompt_window"] is True
    assert set(first["source"]) == SOURCE_KEYS
    assert first["source"] | {"at": None} == {
        "actor": "agent",
        "version_id": added["version_id"],
        "kind": "add",
        "at": None,
        "thread_id": run.thread_id,
        "message_id": message_id,
        "run_id": run.run_id,
        "thread_title": "茶",
        "source_available": True,
    }
    assert second["text"] == "- edited by hand" and second["start_line"] == 3
    assert second["source"]["actor"] == "user" and second["source"]["kind"] == "edit"
    assert second["source"]["thread_id"] is None
    assert second["source"]["source_available"] is False


async def test_an_entry_outside_the_prompt_window_is_marked_and_linted(
    api: Api, container: Container
) -> None:
    _, auth = await api.user(memory=False)
    inside = "记" * 8000  # 24000 bytes
    text = f"{inside}\n\n- beyond the window\n"
    assert (await api.put_file(auth, text)).status_code == 204
    body = (await api.get("/api/v1/memory", auth)).json()
    assert [e["in_prompt_window"] for e in body["entries"]] == [True, True]
    text = f"{inside}\n\n{'x' * 600}\n\n- beyond the window\n"
    assert (await api.put_file(auth, text)).status_code == 204
    body = (await api.get("/api/v1/memory", auth)).json()
    assert [e["in_prompt_window"] for e in body["entries"]] == [True, False, False]
    window = [
        (f["entry_index"], f["message"])
        for f in body["lint"]
        if f["code"] == "outside_prompt_window"
    ]
    assert [index for index, _ in window] == [1, 2] and all(message for _, message in window)


async def test_source_is_the_version_that_last_changed_the_entry(
    api: Api, container: Container
) -> None:
    uid, auth = await api.user()
    run, _ = await make_asked_run(container, uid)
    a = await remember(container, run, "fact A")
    b = await remember(container, run, "fact B")
    c = await remember(container, run, "fact C2", replaces="fact B")
    body = (await api.get("/api/v1/memory", auth)).json()
    assert [(e["text"], e["source"]["version_id"]) for e in body["entries"]] == [
        ("fact A", a["version_id"]),
        ("fact C2", c["version_id"]),
    ]
    assert b["version_id"] not in {e["source"]["version_id"] for e in body["entries"]}
    # An entry nothing recorded (an edit outside Yuxi) has no source.
    memory_file(container, uid).write_text("fact A\n\nwritten outside\n")
    body = (await api.get("/api/v1/memory", auth)).json()
    assert [e["source"] and e["source"]["version_id"] for e in body["entries"]] == [
        a["version_id"],
        None,
    ]


async def test_versions_newest_first_with_content_and_diff(api: Api, container: Container) -> None:
    uid, auth = await api.user()
    run, message_id = await make_asked_run(container, uid, title="notes")
    first = await remember(container, run, "likes tea")
    second = await remember(container, run, "likes coffee", replaces="likes tea")
    versions = await _versions(api, auth)
    assert [v["version_id"] for v in versions] == [second["version_id"], first["version_id"]]
    assert all(set(v) == VERSION_KEYS for v in versions)
    newest, oldest = versions
    assert (newest["kind"], oldest["kind"]) == ("replace", "add")
    assert newest["parent_sha256"] == oldest["sha256"] and oldest["parent_sha256"] == EMPTY_SHA
    assert newest["sha256"] == sha256_of(memory_file(container, uid))
    assert newest["thread_title"] == "notes" and newest["message_id"] == message_id

    detail = (await api.get(f"/api/v1/memory/versions/{second['version_id']}", auth)).json()
    assert set(detail) == VERSION_KEYS | {"content", "diff"}
    assert detail["content"] == "likes coffee\n"
    assert "-likes tea\n" in detail["diff"] and "+likes coffee\n" in detail["diff"]
    first_detail = (await api.get(f"/api/v1/memory/versions/{first['version_id']}", auth)).json()
    assert first_detail["diff"].endswith("+likes tea\n") and "-" not in first_detail["diff"][-12:]


async def test_restore_needs_a_current_if_match(api: Api, container: Container) -> None:
    uid, auth = await api.user(memory=False)
    assert (await api.put_file(auth, "version one\n")).status_code == 204
    assert (await api.put_file(auth, "version two\n")).status_code == 204
    one = (await _versions(api, auth))[-1]
    path = f"/api/v1/memory/versions/{one['version_id']}/restore"
    before = sha256_of(memory_file(container, uid))

    missing = await api.post(path, auth)
    assert missing.status_code == 428
    assert missing.json()["error"]["code"] == "precondition_required"
    stale = await api.post(path, auth, **{"If-Match": etag_for(b"version one\n")})
    assert stale.status_code == 412
    assert stale.json()["error"]["code"] == "precondition_failed"
    assert sha256_of(memory_file(container, uid)) == before
    assert len(await _versions(api, auth)) == 2

    current = (await api.get("/api/v1/memory", auth)).json()["etag"]
    restored = await api.post(path, auth, **{"If-Match": current})
    assert restored.status_code == 200, restored.text
    body = restored.json()
    assert memory_file(container, uid).read_text() == "version one\n"
    assert body["etag"] == etag_for(b"version one\n") == restored.headers["ETag"]
    assert body["version"]["kind"] == "restore" and body["version"]["actor"] == "user"
    assert body["version"]["target_version_id"] == one["version_id"]
    assert body["version"]["sha256"] == one["sha256"]
    assert (await _versions(api, auth))[0]["version_id"] == body["version"]["version_id"]


async def test_undo_refused_after_a_later_change_allowed_right_after(
    api: Api, container: Container
) -> None:
    uid, auth = await api.user()
    run, _ = await make_asked_run(container, uid)
    await remember(container, run, "keep me")
    wrong = await remember(container, run, "WRONG-WRITE-MARK")
    later = await remember(container, run, "a later fact")
    before = memory_file(container, uid).read_bytes()

    refused = await api.post(f"/api/v1/memory/versions/{wrong['version_id']}/undo", auth)
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "memory_conflict" and error["message"]
    assert "+a later fact\n" in error["diff"]
    assert memory_file(container, uid).read_bytes() == before

    undone = await api.post(f"/api/v1/memory/versions/{later['version_id']}/undo", auth)
    assert undone.status_code == 200, undone.text
    assert memory_file(container, uid).read_text() == "keep me\n\nWRONG-WRITE-MARK\n"
    undo = undone.json()["version"]
    assert (undo["kind"], undo["actor"], undo["target_version_id"]) == (
        "undo",
        "user",
        later["version_id"],
    )
    # Now the wrong write is the file's last change again: it can be undone by itself.
    again = await api.post(f"/api/v1/memory/versions/{wrong['version_id']}/undo", auth)
    assert again.status_code == 200, again.text
    assert memory_file(container, uid).read_text() == "keep me\n"
    assert "WRONG-WRITE-MARK" not in memory_file(container, uid).read_text()


async def test_undo_of_the_first_write_empties_memory(api: Api, container: Container) -> None:
    uid, auth = await api.user()
    run, _ = await make_asked_run(container, uid)
    first = await remember(container, run, "only fact")
    undone = await api.post(f"/api/v1/memory/versions/{first['version_id']}/undo", auth)
    assert undone.status_code == 200, undone.text
    assert memory_file(container, uid).read_bytes() == b""
    assert undone.json()["etag"] == etag_for(b"")


async def test_undo_of_a_delete_brings_the_text_back(api: Api, container: Container) -> None:
    uid, auth = await api.user(memory=False)
    assert (await api.put_file(auth, "precious\n")).status_code == 204
    deleted = await api.client.delete("/api/v1/workspace/files/agents/MEMORY.md", headers=auth)
    assert deleted.status_code == 204
    delete_version = (await _versions(api, auth))[0]
    assert (delete_version["kind"], delete_version["size"]) == ("delete", 0)
    undone = await api.post(f"/api/v1/memory/versions/{delete_version['version_id']}/undo", auth)
    assert undone.status_code == 200, undone.text
    assert memory_file(container, uid).read_text() == "precious\n"


async def test_another_users_version_is_not_found_everywhere(
    api: Api, container: Container
) -> None:
    owner_uid, owner = await api.user("owner")
    _, stranger = await api.user("stranger")
    assert (await api.put_file(owner, "OWNER-SECRET-MARK\n")).status_code == 204
    (version,) = await _versions(api, owner)
    vid = version["version_id"]
    before = sha256_of(memory_file(container, owner_uid))
    missing_vid = "mv_" + "0" * 32
    for target in (vid, missing_vid):
        answers = [
            await api.get(f"/api/v1/memory/versions/{target}", stranger),
            await api.post(
                f"/api/v1/memory/versions/{target}/restore", stranger, **{"If-Match": "*"}
            ),
            await api.post(f"/api/v1/memory/versions/{target}/undo", stranger),
        ]
        for answer in answers:
            assert answer.status_code == 404, answer.text
            assert answer.json()["error"] == {
                "code": "not_found",
                "message": "memory version not found",
            }
            assert "OWNER-SECRET-MARK" not in answer.text
    assert await _versions(api, stranger) == []
    stranger_view = (await api.get("/api/v1/memory", stranger)).text
    assert "OWNER-SECRET-MARK" not in stranger_view and vid not in stranger_view
    assert sha256_of(memory_file(container, owner_uid)) == before


async def test_a_deleted_thread_keeps_its_versions_without_a_source(
    api: Api, container: Container
) -> None:
    uid, auth = await api.user()
    run, message_id = await make_asked_run(container, uid, title="old chat")
    added = await remember(container, run, "from a thread that goes away")
    await container.services.chat.delete_thread(uid, run.thread_id)
    (version,) = await _versions(api, auth)
    assert version["version_id"] == added["version_id"]
    assert (version["thread_id"], version["message_id"]) == (run.thread_id, message_id)
    assert (version["thread_title"], version["source_available"]) == (None, False)
    (entry,) = (await api.get("/api/v1/memory", auth)).json()["entries"]
    assert (entry["source"]["thread_title"], entry["source"]["source_available"]) == (None, False)
    assert entry["source"]["thread_id"] == run.thread_id


async def test_unauthenticated_calls_are_refused(api: Api) -> None:
    for response in (
        await api.client.get("/api/v1/memory"),
        await api.client.get("/api/v1/memory/versions"),
        await api.client.post("/api/v1/memory/versions/mv_x/undo"),
    ):
        assert response.status_code == 401
