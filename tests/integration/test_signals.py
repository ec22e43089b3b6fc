"""``yuxi run`` stopped by SIGTERM (process managers, ``docker stop``) or SIGINT (Ctrl-C) shuts
the server down cleanly and stops the embedded PostgreSQL it started (issue 10 §7)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.server import free_port
from yuxi.db.embedded import EmbeddedPostgres


@pytest.fixture
def data_dir() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="yuxi-signal-test-"))
    yield base
    EmbeddedPostgres(base / "pgdata").stop()  # whatever the test left behind
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_server_and_its_embedded_postgres(
    data_dir: Path, sig: signal.Signals
) -> None:
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("YUXI_")},
        "YUXI_DATA_DIR": str(data_dir),
        "YUXI_PORT": str(port),
        "YUXI_WORKERS": "1",
    }
    log = data_dir / "run.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "yuxi.cli", "run"], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        assert EmbeddedPostgres(data_dir / "pgdata").status().running
        proc.send_signal(sig)
        code = proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0, log.read_text()[-3000:]
    assert not EmbeddedPostgres(data_dir / "pgdata").status().running, log.read_text()[-3000:]
