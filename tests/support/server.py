"""A real ``yuxi serve`` process on 127.0.0.1 for the e2e and browser tiers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from yuxi.bootstrap import Container
from yuxi.settings import Settings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LiveServer:
    base_url: str
    settings: Settings
    log_path: Path

    def client(self, token: str | None = None, timeout: float = 60.0) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=timeout)


@pytest.fixture
def live_server_env() -> dict[str, str]:
    """More ``YUXI_*`` settings for the server; a test module overrides this fixture."""
    return {}


@pytest.fixture
def live_server(
    settings: Settings, tmp_path: Path, live_server_env: dict[str, str]
) -> Iterator[LiveServer]:
    port = free_port()
    log_path = tmp_path / "server.log"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("YUXI_")},
        "YUXI_DATABASE_URL": settings.database_url or "",
        "YUXI_DATA_DIR": str(settings.data_dir),
        "YUXI_PORT": str(port),
        "YUXI_HOST": "127.0.0.1",
        "YUXI_WORKERS": os.environ.get("YUXI_TEST_SERVER_WORKERS", "4"),
        "YUXI_HEARTBEAT_SECONDS": "2",
        "YUXI_LEASE_SECONDS": "10",
        "YUXI_POLL_SECONDS": os.environ.get("YUXI_TEST_SERVER_POLL_SECONDS", "5"),
        **live_server_env,
    }
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "yuxi.cli", "serve"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"server exited early:\n{log_path.read_text()[-4000:]}")
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"server did not start:\n{log_path.read_text()[-4000:]}")
            time.sleep(0.2)
        yield LiveServer(base, settings, log_path)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def create_user_with_token(container: Container, name: str) -> tuple[str, str]:
    created = await container.services.users.create_user(name)
    return created.uid, created.token


async def login_link(live_server: LiveServer, container: Container, uid: str) -> str:
    """A login link for ``uid`` as ``yuxi users login-link`` prints it: a single-use code in
    ``?login=``, never a token."""
    code = (await container.services.users.issue_login_code(uid)).code
    return f"{live_server.base_url}/?login={code}"
