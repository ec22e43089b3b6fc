"""Every command runs its event loop on uvloop (yuxi.cli.run_loop), and the server parses
HTTP with httptools: CPU per run is what bounds a process with a slow model (B8)."""

from __future__ import annotations

import asyncio
import re

from tests.support.architecture import SRC
from yuxi.cli import run_loop


def test_run_loop_runs_the_coroutine_on_uvloop_and_returns_its_value() -> None:
    async def main() -> str:
        await asyncio.sleep(0)
        return type(asyncio.get_running_loop()).__module__

    assert run_loop(main()).startswith("uvloop")


def test_no_command_starts_a_loop_of_its_own() -> None:
    """``asyncio.run`` appears once in src: run_loop's fallback where uvloop is missing."""
    calls = [
        (path.relative_to(SRC).as_posix(), line)
        for path in sorted(SRC.rglob("*.py"))
        for line in path.read_text("utf-8").splitlines()
        if re.search(r"\basyncio\.run\(|\buvloop\.run\(|asyncio\.Runner\(", line)
    ]
    assert [p for p, _ in calls] == ["cli/_app.py", "cli/_app.py"], calls


def test_the_server_parses_http_with_httptools() -> None:
    server = (SRC / "api" / "server.py").read_text("utf-8")
    assert 'http="httptools"' in server
    import httptools  # a declared dependency: uvicorn would fail at start-up without it

    assert callable(httptools.HttpRequestParser)
