"""``yuxi backup`` and ``yuxi restore`` through the command line: output, progress on stderr,
exit codes of the refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from yuxi.cli import app
from yuxi.settings import Settings


@pytest.fixture
def env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("YUXI_DATABASE_URL", settings.database_url or "")
    monkeypatch.setenv("YUXI_DATA_DIR", str(settings.data_dir))
    return settings


def test_backup_check_and_a_refused_restore(env: Settings, tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["users", "create", "备份用户"]).exit_code == 0
    out = tmp_path / "b.tar"
    done = runner.invoke(app, ["backup", "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert "1 users" in done.stdout and "dumping the database" in done.stderr
    again = runner.invoke(app, ["backup", "--out", str(out)])
    assert again.exit_code == 1 and "exists" in again.stderr

    check = runner.invoke(app, ["restore", str(out), "--check"])
    assert check.exit_code == 0 and "is whole" in check.stdout
    # The live deployment is not an empty target.
    refused = runner.invoke(app, ["restore", str(out)])
    assert refused.exit_code == 1
    assert "error (restore_target_not_empty)" in refused.stderr and "--force" in refused.stderr

    broken = tmp_path / "broken.tar"
    broken.write_bytes(out.read_bytes()[:5000])
    bad = runner.invoke(app, ["restore", str(broken), "--check"])
    assert bad.exit_code == 1 and "error (archive_invalid)" in bad.stderr
