"""Memory export and import on real PostgreSQL, through HTTP (the app in process): the export
document (every retained version, provenance, diffs, lint) and the file itself; the import as
untrusted input (a dry run writes nothing; If-Match 428/412; the file limit in UTF-8 bytes; bad
bodies refused with a clear code, nothing written); a round trip into another user; the
``import`` version and the entry sources it gives; another user's memory untouched."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import httpx
import pytest

from tests.support.factories import make_asked_run, memory_file, remember, sha256_of
from yuxi.api.app import create_app
from yuxi.bootstrap import Container
from yuxi.limits import MEMORY_FILE_MAX_BYTES, MEMORY_IMPORT_DOCUMENT_MAX_BYTES
from yuxi.services.memory import EXPORT_FORMAT, EXPORT_VERSION
from yuxi.workspace.filesystem import etag_for

EMPTY_SHA = hashlib.sha256(b"").hexdigest()
SECRET = "sk-proj-4fGh2KLmN8pQrS7tUvWx9yZa"
EXPORT_KEYS = {
    "format",
    "version",
    "exported_at",
    "uid",
    "etag",
    "sha256",
    "size",
    "content",
    "versions",
    "lint",
    "retention",
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
    "content",
    "diff",
}
MD = {"Content-Type": "text/markdown; charset=utf-8"}
JSON = {"Content-Type": "application/json"}


class Api:
    def __init__(self, client: httpx.AsyncClient, container: Container) -> None:
        self.client = client
        self.container = container

    async def user(self, name: str) -> tuple[str, dict[str, str]]:
        created = await self.container.services.users.create_user(name)
        await self.container.services.users.set_memory_enabled(created.uid, True)
        return created.uid, {"Authorization": f"Bearer {created.token}"}

    async def etag(self, auth: dict[str, str]) -> str:
        response = await self.client.get("/api/v1/memory", headers=auth)
        assert response.status_code == 200, response.text
        return str(response.json()["etag"])

    async def put(self, auth: dict[str, str], text: str) -> None:
        response = await self.client.put(
            "/api/v1/workspace/files/agents/MEMORY.md",
            content=text.encode(),
            headers={**auth, "If-Match": await self.etag(auth), **MD},
        )
        assert response.status_code == 204, response.text

    async def export(self, auth: dict[str, str]) -> dict[str, Any]:
        response = await self.client.get("/api/v1/memory/export", headers=auth)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("application/json")
        body: dict[str, Any] = response.json()
        assert response.headers["ETag"] == body["etag"]
        return body

    async def versions(self, auth: dict[str, str]) -> list[dict[str, Any]]:
        response = await self.client.get("/api/v1/memory/versions", headers=auth)
        assert response.status_code == 200, response.text
        versions: list[dict[str, Any]] = response.json()["versions"]
        return versions

    async def import_(
        self,
        auth: dict[str, str],
        body: bytes,
        headers: dict[str, str],
        *,
        dry_run: bool = False,
        if_match: str | None = None,
    ) -> httpx.Response:
        extra = {} if if_match is None else {"If-Match": if_match}
        return await self.client.post(
            "/api/v1/memory/import",
            params={"dry_run": "true"} if dry_run else None,
            content=body,
            headers={**auth, **headers, **extra},
        )


@pytest.fixture
async def api(container: Container) -> AsyncIterator[Api]:
    app = create_app(container, workers=0)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://yuxi.test") as client:
        yield Api(client, container)


async def _history(api: Api, uid: str, auth: dict[str, str]) -> None:
    """Four versions of three writers: an agent add (with provenance), a user edit, an agent
    correction, and a user edit that plants a secret (for the lint)."""
    run, _ = await make_asked_run(api.container, uid, "remember: 我喜欢乌龙茶", title="茶")
    assert (await remember(api.container, run, "- 我喜欢乌龙茶"))["status"] == "updated"
    await api.put(auth, memory_file(api.container, uid).read_text() + "- 住在杭州\n")
    corrected = await remember(api.container, run, "- 我喜欢龙井茶", replaces="- 我喜欢乌龙茶")
    assert corrected["status"] == "updated"
    await api.put(auth, memory_file(api.container, uid).read_text() + f"- key {SECRET}\n")


async def test_export_holds_the_file_every_retained_version_and_the_lint(api: Api) -> None:
    uid, auth = await api.user("exporter")
    await _history(api, uid, auth)
    data = memory_file(api.container, uid).read_bytes()

    doc = await api.export(auth)
    assert set(doc) == EXPORT_KEYS
    assert (doc["format"], doc["version"], doc["uid"]) == (EXPORT_FORMAT, EXPORT_VERSION, uid)
    assert datetime.fromisoformat(doc["exported_at"]).tzinfo is not None
    assert doc["content"].encode() == data
    assert (doc["etag"], doc["sha256"], doc["size"]) == (
        etag_for(data),
        hashlib.sha256(data).hexdigest(),
        len(data),
    )
    assert doc["retention"] == {
        "versions_keep": 100,
        "versions_max_bytes": 2 * 1024 * 1024,
        "file_max_bytes": MEMORY_FILE_MAX_BYTES,
    }
    assert [f["code"] for f in doc["lint"]] == ["secret_like"]
    assert SECRET not in json.dumps(doc["lint"])

    listed = await api.versions(auth)
    versions = doc["versions"]
    assert [v["version_id"] for v in versions] == [v["version_id"] for v in listed]
    assert len(versions) == 4
    assert all(set(v) == VERSION_KEYS for v in versions)
    assert [(v["actor"], v["kind"]) for v in versions] == [
        ("user", "edit"),
        ("agent", "replace"),
        ("user", "edit"),
        ("agent", "add"),
    ]
    # One chain, newest first; the newest is the file.
    assert versions[0]["sha256"] == doc["sha256"]
    for newer, older in itertools.pairwise(versions):
        assert newer["parent_sha256"] == older["sha256"]
    assert versions[-1]["parent_sha256"] == EMPTY_SHA
    added = versions[-1]
    assert added["run_id"] and added["thread_id"] and added["message_id"]
    assert added["tool_call_id"] is None and added["thread_title"] == "茶"
    assert added["content"] == "- 我喜欢乌龙茶\n"
    assert "+- 我喜欢乌龙茶" in added["diff"]
    assert "-- 我喜欢乌龙茶" in versions[1]["diff"] and "+- 我喜欢龙井茶" in versions[1]["diff"]
    for version in versions:  # each diff is the one the version API answers
        detail = await api.client.get(
            f"/api/v1/memory/versions/{version['version_id']}", headers=auth
        )
        assert detail.json()["diff"] == version["diff"]


async def test_export_as_markdown_is_the_file_itself(api: Api) -> None:
    uid, auth = await api.user("md")
    empty = await api.client.get("/api/v1/memory/export?format=markdown", headers=auth)
    assert (empty.status_code, empty.content, empty.headers["ETag"]) == (200, b"", etag_for(b""))
    await _history(api, uid, auth)
    response = await api.client.get("/api/v1/memory/export?format=markdown", headers=auth)
    data = memory_file(api.container, uid).read_bytes()
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/markdown")
    assert (response.content, response.headers["ETag"]) == (data, etag_for(data))
    bad = await api.client.get("/api/v1/memory/export?format=pdf", headers=auth)
    assert bad.status_code == 422


async def test_round_trip_into_another_user(api: Api) -> None:
    """Export from one user → import the document into another: the same bytes, as one
    ``user`` / ``import`` version whose entries' source is that import; the first user's memory
    and history are untouched."""
    uid_a, auth_a = await api.user("alice")
    uid_b, auth_b = await api.user("bob")
    await _history(api, uid_a, auth_a)
    for i in range(6):
        await api.put(auth_a, memory_file(api.container, uid_a).read_text() + f"- 事实 {i}\n")
    a_hash, a_versions = sha256_of(memory_file(api.container, uid_a)), await api.versions(auth_a)
    assert len(a_versions) == 10
    exported = await api.client.get("/api/v1/memory/export", headers=auth_a)

    response = await api.import_(auth_b, exported.content, JSON, if_match=await api.etag(auth_b))
    assert response.status_code == 200, response.text
    result = response.json()
    b_data = memory_file(api.container, uid_b).read_bytes()
    assert b_data == memory_file(api.container, uid_a).read_bytes()
    assert result["changed"] is True and result["etag"] == etag_for(b_data)
    assert response.headers["ETag"] == etag_for(b_data)
    assert [f["code"] for f in result["lint"]] == ["secret_like"]
    version = result["version"]
    assert (version["actor"], version["kind"], version["run_id"], version["thread_id"]) == (
        "user",
        "import",
        None,
        None,
    )
    assert [v["version_id"] for v in await api.versions(auth_b)] == [version["version_id"]]
    view = (await api.client.get("/api/v1/memory", headers=auth_b)).json()
    assert len(view["entries"]) == 9
    assert {(e["source"]["kind"], e["source"]["version_id"]) for e in view["entries"]} == {
        ("import", version["version_id"])
    }
    # The first user's memory and history are as they were.
    assert sha256_of(memory_file(api.container, uid_a)) == a_hash
    assert await api.versions(auth_a) == a_versions


async def test_an_import_changes_only_the_entries_it_brings(api: Api) -> None:
    """An entry the file already had keeps its source; a new one's source is the import; an
    import of the same bytes records nothing."""
    _uid, auth = await api.user("merge")
    await api.put(auth, "- 旧的事实\n")
    (edit,) = await api.versions(auth)
    text = "- 旧的事实\n- 新的事实\n"
    response = await api.import_(auth, text.encode(), MD, if_match=await api.etag(auth))
    assert response.status_code == 200, response.text
    view = (await api.client.get("/api/v1/memory", headers=auth)).json()
    assert [(e["text"], e["source"]["kind"]) for e in view["entries"]] == [
        ("- 旧的事实", "edit"),
        ("- 新的事实", "import"),
    ]
    assert view["entries"][0]["source"]["version_id"] == edit["version_id"]
    again = await api.import_(auth, text.encode(), MD, if_match=await api.etag(auth))
    assert again.status_code == 200 and again.json()["changed"] is False
    assert again.json()["version"] is None
    assert len(await api.versions(auth)) == 2


async def test_a_dry_run_answers_entries_diff_and_lint_and_writes_nothing(api: Api) -> None:
    uid, auth = await api.user("dry")
    await api.put(auth, "- 旧的事实\n")
    before_hash, before_versions = (
        sha256_of(memory_file(api.container, uid)),
        await api.versions(auth),
    )
    text = f"# 导入\n\n- 旧的事实\n- 新的事实\n- token {SECRET}\n"
    for headers, body in (
        (MD, text.encode()),
        ({"Content-Type": "text/plain"}, text.encode()),
        (JSON, json.dumps({"format": EXPORT_FORMAT, "version": 1, "content": text}).encode()),
    ):
        response = await api.import_(auth, body, headers, dry_run=True)
        assert response.status_code == 200, response.text
        preview = response.json()
        assert preview["dry_run"] is True and preview["changed"] is True
        assert preview["etag"] == etag_for(b"- \xe6\x97\xa7\xe7\x9a\x84\xe4\xba\x8b\xe5\xae\x9e\n")
        assert preview["size"] == len(text.encode())
        assert [e["text"] for e in preview["entries"]] == [
            "# 导入",
            "- 旧的事实",
            "- 新的事实",
            f"- token {SECRET}",
        ]
        assert preview["entries"][1]["start_line"] == 3
        assert "+- 新的事实" in preview["diff"] and " - 旧的事实" in preview["diff"]
        assert [(f["code"], f["entry_index"]) for f in preview["lint"]] == [("secret_like", 3)]
    assert sha256_of(memory_file(api.container, uid)) == before_hash
    assert await api.versions(auth) == before_versions


async def test_apply_needs_a_current_if_match(api: Api) -> None:
    uid, auth = await api.user("precondition")
    await api.put(auth, "- 旧的事实\n")
    stale = await api.etag(auth)
    await api.put(auth, "- 旧的事实\n- 又一条\n")
    before = sha256_of(memory_file(api.container, uid)), len(await api.versions(auth))
    missing = await api.import_(auth, "- 导入\n".encode(), MD)
    assert missing.status_code == 428
    assert missing.json()["error"]["code"] == "precondition_required"
    old = await api.import_(auth, "- 导入\n".encode(), MD, if_match=stale)
    assert old.status_code == 412
    assert old.json()["error"]["code"] == "precondition_failed"
    assert (sha256_of(memory_file(api.container, uid)), len(await api.versions(auth))) == before


def _cjk_file(size: int) -> bytes:
    """A file of exactly ``size`` UTF-8 bytes, mostly three-byte CJK."""
    data = ("记" * (size // 3)).encode() + b"x" * (size % 3)
    assert len(data) == size
    return data


@pytest.mark.parametrize("as_json", [False, True], ids=["markdown", "export-document"])
async def test_the_file_limit_in_utf8_bytes(api: Api, as_json: bool) -> None:
    uid, auth = await api.user("limit")
    await api.put(auth, "- 旧的事实\n")
    before = sha256_of(memory_file(api.container, uid)), len(await api.versions(auth))

    def body(data: bytes) -> tuple[bytes, dict[str, str]]:
        if not as_json:
            return data, MD
        doc = {"format": EXPORT_FORMAT, "version": 1, "content": data.decode()}
        return json.dumps(doc, ensure_ascii=False).encode(), JSON

    over = body(_cjk_file(MEMORY_FILE_MAX_BYTES + 1))
    for dry_run in (True, False):
        refused = await api.import_(auth, *over, dry_run=dry_run, if_match=await api.etag(auth))
        assert refused.status_code == 413, refused.text
        assert refused.json()["error"]["code"] == "file_too_large"
    assert (sha256_of(memory_file(api.container, uid)), len(await api.versions(auth))) == before

    at = _cjk_file(MEMORY_FILE_MAX_BYTES)
    ok = await api.import_(auth, *body(at), if_match=await api.etag(auth))
    assert ok.status_code == 200, ok.text
    assert memory_file(api.container, uid).read_bytes() == at


async def test_an_export_document_is_bounded_as_it_streams_in(api: Api) -> None:
    """Fields it does not read count too: n bytes are read, n + 1 refused before parsing."""
    _, auth = await api.user("document")
    head, tail = b'{"format": "yuxi-memory-export", "version": 1, "content": "- a", "pad": "', b'"}'
    for size, status in (
        (MEMORY_IMPORT_DOCUMENT_MAX_BYTES, 200),
        (MEMORY_IMPORT_DOCUMENT_MAX_BYTES + 1, 413),
    ):
        body = head + b"x" * (size - len(head) - len(tail)) + tail
        response = await api.import_(auth, body, JSON, dry_run=True)
        assert response.status_code == status, response.text[:200]


J, BAD, WRONG = "application/json", "invalid_import", "unsupported_import_format"
DOC = b'{"format": "yuxi-memory-export", "version": %b, "content": %b}'
DOC_SHA = b'{"format": "yuxi-memory-export", "version": 1, "content": %b, "sha256": %b}'


@pytest.mark.parametrize(
    ("body", "content_type", "status", "code"),
    [
        (b"- caf\xe9\n", "text/markdown", 400, BAD),
        (b"- a\x00b\n", "text/plain", 400, BAD),
        (DOC % (b"1", b'"a\\u0000"'), J, 400, BAD),
        (DOC % (b"1", b'"\\ud800"'), J, 400, BAD),
        (DOC_SHA % (rb'"- \u8336\n"', b'"' + b"0" * 64 + b'"'), J, 400, BAD),
        (DOC_SHA % (rb'"- \u8336\n"', b"7"), J, 400, BAD),
        (b"{not json", J, 400, BAD),
        (b'{"format": "chatgpt-memory", "version": 1, "content": "x"}', J, 422, WRONG),
        (DOC % (b"2", b'"x"'), J, 422, WRONG),
        (DOC % (b"true", b'"x"'), J, 422, WRONG),
        (DOC % (b"1", b"null"), J, 422, WRONG),
        (b'["yuxi-memory-export"]', J, 422, WRONG),
        (b"- x\n", "image/png", 415, "unsupported_media_type"),
        (b"- x\n", "text/markdown; charset=latin-1", 415, "unsupported_media_type"),
    ],
)
async def test_a_body_that_is_not_a_memory_file_is_refused_and_nothing_written(
    api: Api, body: bytes, content_type: str, status: int, code: str
) -> None:
    uid, auth = await api.user("refused")
    await api.put(auth, "- 旧的事实\n")
    before = sha256_of(memory_file(api.container, uid)), len(await api.versions(auth))
    for dry_run in (True, False):
        response = await api.import_(
            auth,
            body,
            {"Content-Type": content_type},
            dry_run=dry_run,
            if_match=await api.etag(auth),
        )
        assert response.status_code == status, response.text
        assert response.json()["error"]["code"] == code
    assert (sha256_of(memory_file(api.container, uid)), len(await api.versions(auth))) == before


async def test_export_and_import_need_a_token(api: Api) -> None:
    assert (await api.client.get("/api/v1/memory/export")).status_code == 401
    response = await api.client.post("/api/v1/memory/import", content=b"- x\n", headers=MD)
    assert response.status_code == 401
