"""Import says what it does (issue 36 §3), on real PostgreSQL through HTTP: the dry run counts
the entries the file has now (N) and the imported file has (M), so the UI can say "replaces your
N entries with M"; ``?mode=append`` is a real mode of the import — the current entries kept byte
for byte, the imported ones not already there added after them, one ``import`` version that
undo reverts exactly, the file limit in UTF-8 bytes at the boundary (n ok, n+1 refused, nothing
written), a stale If-Match refused as for a replace."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.support.factories import memory_file, sha256_of
from yuxi.api.app import create_app
from yuxi.bootstrap import Container
from yuxi.limits import MEMORY_FILE_MAX_BYTES
from yuxi.services.memory import split_entries

MEMORY = "/api/v1/workspace/files/agents/MEMORY.md"
MD = {"Content-Type": "text/markdown; charset=utf-8"}


class Api:
    def __init__(self, client: httpx.AsyncClient, container: Container) -> None:
        self.client = client
        self.container = container

    async def user(self, name: str) -> tuple[str, dict[str, str]]:
        created = await self.container.services.users.create_user(name)
        return created.uid, {"Authorization": f"Bearer {created.token}"}

    async def etag(self, auth: dict[str, str]) -> str:
        response = await self.client.get("/api/v1/memory", headers=auth)
        assert response.status_code == 200, response.text
        return str(response.json()["etag"])

    async def put(self, auth: dict[str, str], text: str) -> None:
        response = await self.client.put(
            MEMORY, content=text.encode(), headers={**auth, "If-Match": await self.etag(auth), **MD}
        )
        assert response.status_code == 204, response.text

    async def versions(self, auth: dict[str, str]) -> list[dict[str, Any]]:
        response = await self.client.get("/api/v1/memory/versions", headers=auth)
        assert response.status_code == 200, response.text
        versions: list[dict[str, Any]] = response.json()["versions"]
        return versions

    async def import_(
        self, auth: dict[str, str], text: str, *, mode: str | None, dry_run: bool, etag: str = ""
    ) -> httpx.Response:
        params = {"dry_run": "true"} if dry_run else {}
        if mode is not None:
            params["mode"] = mode
        headers = {**auth, **MD, **({"If-Match": etag} if etag else {})}
        return await self.client.post(
            "/api/v1/memory/import", params=params, content=text.encode(), headers=headers
        )


@pytest.fixture
async def api(container: Container) -> AsyncIterator[Api]:
    app = create_app(container, workers=0)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://yuxi.test") as client:
        yield Api(client, container)


CURRENT = "# 我\n\n- 喜欢乌龙茶\n- lives in Hangzhou  \n"
IMPORTED = "- 喜欢乌龙茶\n* lives   in Hangzhou\n- 养了一只猫\n\n一段说明\n- 会说法语\n"


async def test_the_dry_run_counts_both_sides_in_each_mode(api: Api) -> None:
    uid, auth = await api.user("counts")
    await api.put(auth, CURRENT)
    before = sha256_of(memory_file(api.container, uid)), await api.versions(auth)

    replace = (await api.import_(auth, IMPORTED, mode=None, dry_run=True)).json()
    assert (replace["mode"], replace["current_entries"], replace["imported_entries"]) == (
        "replace",
        3,
        5,
    )
    # "- 喜欢乌龙茶" and "* lives   in Hangzhou" (marker and spaces aside) are there already
    assert replace["new_entries"] == 3
    assert replace["size"] == len(IMPORTED.encode())

    append = (await api.import_(auth, IMPORTED, mode="append", dry_run=True)).json()
    assert (append["mode"], append["current_entries"], append["imported_entries"]) == (
        "append",
        3,
        5,
    )
    assert append["new_entries"] == 3
    assert [e["text"] for e in append["entries"]] == [
        "# 我",
        "- 喜欢乌龙茶",
        "- lives in Hangzhou  ",
        "- 养了一只猫",
        "一段说明",
        "- 会说法语",
    ]
    assert "-" + "- 喜欢乌龙茶" not in append["diff"]  # nothing of the current file removed
    assert "+- 养了一只猫" in append["diff"]
    # a dry run writes nothing, in either mode
    assert (sha256_of(memory_file(api.container, uid)), await api.versions(auth)) == before


async def test_append_keeps_the_current_entries_and_undo_reverts_it(api: Api) -> None:
    uid, auth = await api.user("append")
    await api.put(auth, CURRENT)
    etag = await api.etag(auth)
    applied = await api.import_(auth, IMPORTED, mode="append", dry_run=False, etag=etag)
    assert applied.status_code == 200, applied.text
    body = applied.json()
    assert body["mode"] == "append" and body["changed"] is True
    text = memory_file(api.container, uid).read_text("utf-8")
    assert text.startswith(CURRENT.rstrip("\n"))  # the current bytes, as they were
    assert [e.text for e in split_entries(text)] == [
        "# 我",
        "- 喜欢乌龙茶",
        "- lives in Hangzhou  ",
        "- 养了一只猫",
        "一段说明",
        "- 会说法语",
    ]
    versions = await api.versions(auth)
    assert (versions[0]["actor"], versions[0]["kind"]) == ("user", "import")
    assert versions[0]["version_id"] == body["version"]["version_id"]

    undone = await api.client.post(
        f"/api/v1/memory/versions/{body['version']['version_id']}/undo", headers=auth
    )
    assert undone.status_code == 200, undone.text
    assert memory_file(api.container, uid).read_text("utf-8") == CURRENT

    # Appending what is all there already changes nothing and records nothing.
    count = len(await api.versions(auth))
    same = await api.import_(
        auth, "- 喜欢乌龙茶\n", mode="append", dry_run=False, etag=await api.etag(auth)
    )
    assert same.status_code == 200 and same.json()["changed"] is False
    assert len(await api.versions(auth)) == count


async def test_append_into_an_empty_memory_is_the_imported_entries(api: Api) -> None:
    uid, auth = await api.user("empty")
    etag = await api.etag(auth)
    applied = await api.import_(auth, "- 一\n- 一\n- 二\n", mode="append", dry_run=False, etag=etag)
    assert applied.status_code == 200, applied.text
    assert memory_file(api.container, uid).read_text("utf-8") == "- 一\n- 二\n"


async def test_append_stops_at_the_file_limit_in_utf8_bytes(api: Api) -> None:
    uid, auth = await api.user("limit")
    head = "- 旧\n"  # 6 bytes
    await api.put(auth, head)
    # The appended file is head + "- " + body + "\n": fill it to exactly the limit with CJK
    # (3 bytes each) and ASCII.
    room = MEMORY_FILE_MAX_BYTES - len(head.encode()) - len("- \n")
    body = "茶" * (room // 3) + "x" * (room % 3)
    fits = f"- {body}\n"
    preview = await api.import_(auth, fits, mode="append", dry_run=True)
    assert preview.status_code == 200, preview.text
    assert preview.json()["size"] == MEMORY_FILE_MAX_BYTES

    too_big = f"- {body}y\n"  # one byte more
    before = sha256_of(memory_file(api.container, uid)), len(await api.versions(auth))
    for dry_run in (True, False):
        refused = await api.import_(
            auth, too_big, mode="append", dry_run=dry_run, etag=await api.etag(auth)
        )
        assert refused.status_code == 413, refused.text
        assert refused.json()["error"]["code"] == "file_too_large"
        assert "nothing was written" in refused.json()["error"]["message"]
    assert (sha256_of(memory_file(api.container, uid)), len(await api.versions(auth))) == before

    applied = await api.import_(auth, fits, mode="append", dry_run=False, etag=await api.etag(auth))
    assert applied.status_code == 200, applied.text
    assert memory_file(api.container, uid).stat().st_size == MEMORY_FILE_MAX_BYTES


async def test_append_needs_the_previewed_file_and_a_known_mode(api: Api) -> None:
    uid, auth = await api.user("stale")
    await api.put(auth, CURRENT)
    stale = await api.etag(auth)
    await api.put(auth, CURRENT + "- 又一条\n")
    before = sha256_of(memory_file(api.container, uid))
    refused = await api.import_(auth, IMPORTED, mode="append", dry_run=False, etag=stale)
    assert refused.status_code == 412, refused.text
    missing = await api.import_(auth, IMPORTED, mode="append", dry_run=False)
    assert missing.status_code == 428, missing.text
    bad = await api.import_(auth, IMPORTED, mode="merge", dry_run=True)
    assert bad.status_code == 422, bad.text
    assert sha256_of(memory_file(api.container, uid)) == before
