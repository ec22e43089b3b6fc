"""``yuxi memory export`` against a real database, and the export → import round trip of a
memory with more versions than retention keeps: the document holds exactly the retained ones,
and the imported file is byte-identical."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from yuxi import limits
from yuxi.api.app import create_app
from yuxi.bootstrap import Container, bootstrap
from yuxi.cli import app
from yuxi.services.memory import EXPORT_FORMAT, MemoryImportResult
from yuxi.settings import Settings
from yuxi.workspace.filesystem import etag_for

WRITES = limits.MEMORY_VERSIONS_KEEP + 20


@pytest.fixture
def env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("YUXI_DATABASE_URL", settings.database_url or "")
    monkeypatch.setenv("YUXI_DATA_DIR", str(settings.data_dir))
    return settings


async def _grow(settings: Settings) -> tuple[str, str]:
    """Two users; the first's memory written WRITES times by its owner (CJK lines)."""
    c = await bootstrap(settings)
    try:
        alice = (await c.services.users.create_user("alice")).uid
        bob = (await c.services.users.create_user("bob")).uid
        text, etag = "", etag_for(b"")
        for i in range(WRITES):
            text += f"- 第{i}条记忆：喜欢乌龙茶 {i}\n"
            etag = await c.services.memory.write_memory_file(alice, text.encode(), if_match=etag)
        return alice, bob
    finally:
        await c.aclose()


async def _import(settings: Settings, uid: str, document: bytes) -> MemoryImportResult:
    c = await bootstrap(settings)
    try:
        _, etag = await c.services.memory.read_memory_file(uid)
        result = await c.services.memory_versions.import_memory(
            uid, document, "application/json", dry_run=False, if_match=etag
        )
        assert isinstance(result, MemoryImportResult)
        return result
    finally:
        await c.aclose()


def test_export_cli_and_a_round_trip_of_every_retained_version(
    env: Settings, tmp_path: Path
) -> None:
    alice, bob = asyncio.run(_grow(env))
    runner = CliRunner()
    out = tmp_path / "alice.json"
    exported = runner.invoke(app, ["memory", "export", alice, "--out", str(out)])
    assert exported.exit_code == 0, exported.output
    document = out.read_bytes()
    doc = json.loads(document)
    file = runner.invoke(app, ["memory", "export", alice, "--markdown"]).stdout_bytes
    assert file.startswith("- 第0条记忆".encode()) and file.endswith(f"{WRITES - 1}\n".encode())
    assert doc["format"] == EXPORT_FORMAT and doc["version"] == 1 and doc["uid"] == alice
    assert doc["content"].encode() == file and doc["size"] == len(file)
    assert len(doc["versions"]) == limits.MEMORY_VERSIONS_KEEP < WRITES
    assert doc["versions"][0]["sha256"] == doc["sha256"]

    # standard output carries the same document
    printed = runner.invoke(app, ["memory", "export", alice])
    assert printed.exit_code == 0
    assert json.loads(printed.stdout_bytes)["versions"] == doc["versions"]

    result = asyncio.run(_import(env, bob, document))
    assert runner.invoke(app, ["memory", "export", bob, "--markdown"]).stdout_bytes == file
    assert result.version is not None and result.version.kind == "import"
    print(
        f"\nround trip: {WRITES} writes, {len(doc['versions'])} versions exported, document "
        f"{len(document)} bytes, MEMORY.md {len(file)} bytes, identical after import"
    )


def test_export_of_an_unknown_user_is_an_error(env: Settings) -> None:
    result = CliRunner().invoke(app, ["memory", "export", "u_nobody"])
    assert result.exit_code == 1
    assert "not_found" in result.output


async def test_an_export_at_the_retention_bound_fits_the_import_bound(container: Container) -> None:
    """The largest export there can be — retained versions summing to the byte bound, each diff
    as large as difflib makes it (a file of one repeated line is all junk to its matcher: every
    diff is the whole old file removed and the new one added) — is still under
    ``MEMORY_IMPORT_DOCUMENT_MAX_BYTES``, and imports back byte for byte."""
    owner = await container.services.users.create_user("big")
    other = await container.services.users.create_user("other")
    line = "- 同一条很长的记忆，一遍又一遍。\n"
    body = line * (limits.MEMORY_FILE_MAX_BYTES // len(line.encode()) - 1)
    etag = etag_for(b"")
    for i in range(20):
        text = f"- {i}\n{body}".encode()
        etag = await container.services.memory.write_memory_file(owner.uid, text, if_match=etag)
    transport = httpx.ASGITransport(app=create_app(container, workers=0))
    async with httpx.AsyncClient(transport=transport, base_url="http://yuxi.test") as client:
        started = time.perf_counter()
        exported = await client.get(
            "/api/v1/memory/export", headers={"Authorization": f"Bearer {owner.token}"}
        )
        took = time.perf_counter() - started
        doc = exported.json()
        assert sum(v["size"] for v in doc["versions"]) <= limits.MEMORY_VERSIONS_MAX_BYTES
        assert 3 * 1024 * 1024 < len(exported.content) < limits.MEMORY_IMPORT_DOCUMENT_MAX_BYTES
        auth = {"Authorization": f"Bearer {other.token}", "Content-Type": "application/json"}
        imported = await client.post(
            "/api/v1/memory/import", content=exported.content, headers={**auth, "If-Match": "*"}
        )
        assert imported.status_code == 200, imported.text
    data, _ = await container.services.memory.read_memory_file(other.uid)
    assert data == doc["content"].encode()
    print(
        f"\nlargest export: {len(doc['versions'])} versions, {len(exported.content)} bytes "
        f"(import bound {limits.MEMORY_IMPORT_DOCUMENT_MAX_BYTES}), built in {took * 1000:.0f} ms"
    )
