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


def _uid_of(output: str) -> str:
    found = re.search(r"uid:\s+(\S+)", output)
    assert found, output
    return found.group(1)


def test_users_list_and_tokens_list_create_revoke(env: Settings) -> None:
    runner = CliRunner()
    ann = runner.invoke(app, ["users", "create", "ann"])
    ben = runner.invoke(app, ["users", "create", "ben 本"])
    assert ann.exit_code == ben.exit_code == 0, ann.output + ben.output
    ann_uid, ben_uid = _uid_of(ann.output), _uid_of(ben.output)
    ann_token = re.search(r"token:\s+(yx_\S+)", ann.output)
    assert ann_token

    listed = runner.invoke(app, ["users", "list"])
    assert listed.exit_code == 0, listed.output
    rows = listed.output.splitlines()[1:]
    assert [r.split()[0] for r in rows] == [ann_uid, ben_uid]
    assert rows[0].endswith("  ann") and rows[1].endswith("  ben 本")

    created = runner.invoke(app, ["tokens", "create", ann_uid, "--label", "ci", "--days", "7"])
    assert created.exit_code == 0, created.output
    ci_token = re.search(r"token:\s+(yx_\S+)", created.output)
    assert ci_token and re.search(r"expires:\s+\d{4}-\d\d-\d\d ", created.output)

    def token_rows() -> list[list[str]]:
        result = runner.invoke(app, ["tokens", "list", ann_uid])
        assert result.exit_code == 0, result.output
        for secret in (ann_token.group(1), ci_token.group(1)):
            assert secret not in result.output and secret[3:] not in result.output
        return [line.split() for line in result.output.splitlines()[1:]]

    rows_now = token_rows()
    assert [(r[1], r[-1]) for r in rows_now] == [("active", "default"), ("active", "ci")]
    assert "never" in rows_now[0] and "never" not in rows_now[1]
    ci_id = rows_now[1][0]

    one = runner.invoke(app, ["tokens", "revoke", ann_uid, "--id", ci_id])
    assert one.exit_code == 0 and one.output.strip() == f"revoked 1 token(s): [{ci_id}]"
    assert [r[1] for r in token_rows()] == ["active", "revoked"]
    rest = runner.invoke(app, ["tokens", "revoke", ann_uid])
    assert rest.exit_code == 0 and rest.output.startswith("revoked 1 token(s)")
    assert [r[1] for r in token_rows()] == ["revoked", "revoked"]
    again = runner.invoke(app, ["tokens", "revoke", ann_uid])
    assert again.exit_code == 0 and again.output.strip() == "revoked 0 token(s)"

    # another user's token, an unknown user, a bad expiry: one clear line, exit 1
    for args in (
        ["tokens", "revoke", ben_uid, "--id", ci_id],
        ["tokens", "list", "u_nobody"],
        ["tokens", "create", ann_uid, "--days", "0"],
    ):
        refused = runner.invoke(app, args)
        assert refused.exit_code == 1, (args, refused.output)
        assert refused.output.startswith("error ("), refused.output


def test_users_login_link_prints_a_single_use_code_and_mints_no_token(env: Settings) -> None:
    runner = CliRunner()
    uid = _uid_of(runner.invoke(app, ["users", "create", "cleo"]).output)
    links = [runner.invoke(app, ["users", "login-link", uid]) for _ in range(2)]
    codes = []
    for link in links:
        assert link.exit_code == 0, link.output
        found = re.fullmatch(r"http://[^/]+/\?login=(yl_[A-Za-z0-9_-]{43})\n", link.output)
        assert found, link.output
        codes.append(found.group(1))
    assert codes[0] != codes[1]
    listed = runner.invoke(app, ["tokens", "list", uid])
    assert len(listed.output.splitlines()) == 2  # the header and the one token `create` made
    missing = runner.invoke(app, ["users", "login-link", "u_nobody"])
    assert missing.exit_code == 1 and "user not found" in missing.output


def test_users_login_link_uses_the_public_url(
    env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    uid = _uid_of(runner.invoke(app, ["users", "create", "dara"]).output)
    monkeypatch.setenv("YUXI_HOST", "0.0.0.0")  # noqa: S104 - listens everywhere, never named
    monkeypatch.setenv("YUXI_PORT", "8000")
    local = runner.invoke(app, ["users", "login-link", uid])
    assert local.output.startswith("http://127.0.0.1:8000/?login=yl_"), local.output
    monkeypatch.setenv("YUXI_PUBLIC_URL", "https://yuxi.example.org/")
    public = runner.invoke(app, ["users", "login-link", uid])
    assert public.exit_code == 0, public.output
    assert public.output.startswith("https://yuxi.example.org/?login=yl_"), public.output
