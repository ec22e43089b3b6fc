"""``yuxi run`` / ``yuxi serve`` check their port before starting anything: with the port held
by another process they exit 1 naming the port and the way out, having started no embedded
PostgreSQL and minted no login link. And ``--help`` reads like help (no bare type labels)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from yuxi.cli import app


@pytest.mark.parametrize("command", ["run", "serve"])
@pytest.mark.parametrize("how", ["env", "option"])
def test_a_port_in_use_stops_the_command_before_anything_starts(
    tmp_path: Path, command: str, how: str
) -> None:
    holder = socket.create_server(("127.0.0.1", 0))  # a real listener holds the port
    port = holder.getsockname()[1]
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("YUXI_")},
        "YUXI_DATA_DIR": str(tmp_path / "data"),
    }
    args = [sys.executable, "-m", "yuxi.cli", command]
    if how == "env":
        env["YUXI_PORT"] = str(port)
    else:
        args += ["--port", str(port)]
    try:
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    finally:
        holder.close()
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"port {port} is in use" in done.stderr
    assert "set YUXI_PORT or pass --port" in done.stderr
    assert "Traceback" not in done.stderr
    assert "login=" not in done.stdout + done.stderr  # no login link was minted
    assert not (tmp_path / "data" / "pgdata").exists()  # no embedded PostgreSQL was started


@pytest.mark.parametrize(
    "command",
    [
        ["run"],
        ["serve"],
        ["worker"],
        ["bench"],
        ["users", "create"],
        ["tokens", "create"],
        ["tokens", "revoke"],
        ["eval", "run"],
    ],
)
def test_help_shows_metavars_and_defaults_without_raw_markup(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    text = result.output
    for bare in ("<bool>", "<int>", "<float>", "<list[str]>", "``"):
        assert bare not in text, (command, bare, text)


def test_help_names_the_port_option_and_its_defaults() -> None:
    text = CliRunner().invoke(app, ["run", "--help"]).output
    assert "--port PORT" in text and "--host HOST" in text
    assert "YUXI_PORT or 8000" in text and "YUXI_HOST or 127.0.0.1" in text
    assert "[default: 1;" in CliRunner().invoke(app, ["worker", "--help"]).output


def test_listen_problem_names_a_held_port_and_passes_a_free_one() -> None:
    from yuxi.utils.ports import listen_problem

    holder = socket.create_server(("127.0.0.1", 0))
    port = holder.getsockname()[1]
    try:
        assert listen_problem("127.0.0.1", port) == f"port {port} is in use on 127.0.0.1"
    finally:
        holder.close()
    assert listen_problem("127.0.0.1", port) is None  # released: free again at once
