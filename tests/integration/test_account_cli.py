"""``yuxi users export`` and ``yuxi users delete`` against a real database."""

from __future__ import annotations

import asyncio
import json
import re
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.db_scan import scan_database
from yuxi.bootstrap import bootstrap
from yuxi.cli import app
from yuxi.settings import Settings


@pytest.fixture
def env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("YUXI_DATABASE_URL", settings.database_url or "")
    monkeypatch.setenv("YUXI_DATA_DIR", str(settings.data_dir))
    return settings


def _write_file(settings: Settings, uid: str, path: str, data: bytes) -> None:
    async def main() -> None:
        c = await bootstrap(settings)
        try:
            await c.services.files.write_file(uid, path, data)
        finally:
            await c.aclose()

    asyncio.run(main())


def test_users_export_then_delete_with_confirmation(env: Settings, tmp_path: Path) -> None:
    runner = CliRunner()
    created = runner.invoke(app, ["users", "create", "leaving 离开"])
    assert created.exit_code == 0, created.output
    found = re.search(r"uid:\s+(\S+)", created.output)
    assert found
    uid = found.group(1)
    _write_file(env, uid, "notes/qzxclimarker.md", b"qzxclimarker")

    out = tmp_path / "export.zip"
    exported = runner.invoke(app, ["users", "export", uid, "--out", str(out)])
    assert exported.exit_code == 0, exported.output
    assert f"wrote {out}" in exported.output
    with zipfile.ZipFile(out) as zf:
        names = set(zf.namelist())
        assert json.loads(zf.read("account.json"))["user"]["uid"] == uid
        assert zf.read("workspace/notes/qzxclimarker.md") == b"qzxclimarker"
    assert {"account.json", "memory/export.json", "runs.jsonl"} <= names
    assert not list(tmp_path.glob(".export.zip.partial"))

    declined = runner.invoke(app, ["users", "delete", uid], input="n\n")
    assert declined.exit_code == 1 and "Aborted" in declined.output
    assert scan_database(env.database_url or "", [uid]).hits  # nothing was deleted

    confirmed = runner.invoke(app, ["users", "delete", uid], input="y\n")
    assert confirmed.exit_code == 0, confirmed.output
    assert f"deleted {uid}: " in confirmed.output and "users 1" in confirmed.output
    assert not scan_database(env.database_url or "", [uid, "qzxclimarker"]).hits

    again = runner.invoke(app, ["users", "delete", uid, "--yes"])
    assert again.exit_code == 1 and "not_found" in again.output
    missing = runner.invoke(app, ["users", "export", uid, "--out", str(tmp_path / "x.zip")])
    assert missing.exit_code == 1 and not (tmp_path / "x.zip").exists()
    assert not list(tmp_path.glob(".x.zip.partial"))
