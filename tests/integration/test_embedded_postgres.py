"""The embedded PostgreSQL: start, reuse after its owner crashed, stop; never under $HOME."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from yuxi.db.embedded import EmbeddedPostgres
from yuxi.errors import ConfigurationError


@pytest.fixture
def pgdata() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="yuxi-embedded-test-"))
    yield base / "pgdata"
    EmbeddedPostgres(base / "pgdata").stop()
    shutil.rmtree(base, ignore_errors=True)


def test_a_crashed_owner_leaves_a_server_that_is_reused_then_stopped(pgdata: Path) -> None:
    owner = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; from pathlib import Path; from yuxi.db.embedded import "
            "EmbeddedPostgres; e = EmbeddedPostgres(Path(sys.argv[1])); print(e.start(), "
            "flush=True); os.kill(os.getpid(), 9)",
            str(pgdata),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert owner.returncode == -signal.SIGKILL
    url = owner.stdout.strip()
    assert url.startswith("postgresql://")
    server = EmbeddedPostgres(pgdata)
    assert server.status().running  # left running by the dead owner
    assert server.start() == url
    assert server.started_by_us is False  # detected and reused, not started twice
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert server.stop() is True
    assert not server.status().running
    assert server.stop() is False


@pytest.mark.skipif(os.geteuid() != 0, reason="parent permissions are widened only as root")
def test_data_dir_under_home_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="home directory"):
        EmbeddedPostgres(Path.home() / "yuxi-should-not-exist" / "pgdata").start()
    assert not (Path.home() / "yuxi-should-not-exist").exists()


def test_start_after_stop_in_the_same_process_really_starts(pgdata: Path) -> None:
    first = EmbeddedPostgres(pgdata)
    url = first.start()
    assert first.stop() is True
    again = EmbeddedPostgres(pgdata)
    assert again.start() == url
    assert again.started_by_us is True
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_the_server_folds_case_in_every_script_and_listens_on_no_tcp_port(pgdata: Path) -> None:
    """A cluster made here has the builtin C.UTF-8 locale: ILIKE and lower() are Unicode-aware
    (not ASCII-only, as the libc C.UTF-8 ctype of the old embedded server was), and pg_trgm
    keeps CJK characters in its trigrams (it classifies them with the libc ctype)."""
    server = EmbeddedPostgres(pgdata)
    url = server.start()
    with psycopg.connect(url) as conn:
        assert conn.execute("SHOW server_version_num").fetchone()[0].startswith("18")  # type: ignore[index]
        assert conn.execute(
            "SELECT 'Ä' ILIKE 'ä', 'Σ' ILIKE 'σ', lower('ÄΣ') = 'äσ', 'ÄΣ' ~* 'äσ'"
        ).fetchone() == (True, True, True, True)
        assert conn.execute(
            "SELECT datlocprovider, datlocale, datctype FROM pg_database "
            "WHERE datname = current_database()"
        ).fetchone() == ("b", "C.UTF-8", "C.UTF-8")
        assert conn.execute("SHOW listen_addresses").fetchone() == ("",)
        conn.execute("CREATE EXTENSION pg_trgm")
        trigrams = conn.execute("SELECT show_trgm('记忆检索')").fetchone()
        assert trigrams is not None and len(trigrams[0]) == 5  # 2 padded + 2 inner + 1 tail
