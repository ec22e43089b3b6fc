"""The ``yuxi`` CLI against a real database: users, eval runs, db commands."""

from __future__ import annotations

import json
import re
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


def test_users_create_then_eval_run(env: Settings, tmp_path: Path) -> None:
    runner = CliRunner()
    created = runner.invoke(app, ["users", "create", "evaluator"])
    assert created.exit_code == 0, created.output
    uid = re.search(r"uid:\s+(\S+)", created.output)
    token = re.search(r"token:\s+(yx_\S+)", created.output)
    assert uid and token
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "\n".join(
            json.dumps(c, ensure_ascii=False)
            for c in [
                {"input": "hello there", "expect": "hello there"},
                {"input": "你好", "expect": "你好"},
                {"input": "echo me", "expect": "something else"},
            ]
        )
    )
    result = runner.invoke(app, ["eval", "run", str(cases), "--uid", uid.group(1)])
    assert result.exit_code == 1, result.output  # one expectation fails on purpose
    assert "2 passed, 1 failed" in result.output
    assert result.output.count("completed") == 3


def test_eval_run_refuses_a_bad_line(env: Settings, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"nope": 1}\n')
    result = CliRunner().invoke(app, ["eval", "run", str(bad), "--uid", "u_x"])
    assert result.exit_code != 0
    assert "line 1" in result.output


def test_db_upgrade_is_idempotent(env: Settings) -> None:
    runner = CliRunner()
    for _ in range(2):
        result = runner.invoke(app, ["db", "upgrade"])
        assert result.exit_code == 0, result.output
        assert "external PostgreSQL" in result.output
