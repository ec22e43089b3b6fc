"""The embedded PostgreSQL server, started by the project itself when no ``YUXI_DATABASE_URL``
is set.

The server binaries come from the ``pgserver`` wheel. The data directory lives under
``YUXI_DATA_DIR`` (``<data_dir>/pgdata``) and the server listens only on a Unix socket, so it
never collides with another PostgreSQL on the machine's TCP ports.

Lifecycle:

* :meth:`EmbeddedPostgres.start` initialises the cluster on first use and starts it — or, when a
  server is already running on the same data directory (left behind by a crashed owner, or
  started by another ``yuxi`` process), reuses it.
* :meth:`EmbeddedPostgres.stop` stops the server with a fast shutdown. ``yuxi serve`` calls it at
  exit only when it was the process that started the server; ``yuxi db stop`` stops it whoever
  started it.

Run as root, pgserver runs the server as an unprivileged ``pgserver`` system user and widens the
permissions (``g+rx,o+rx``) of every parent directory of the data directory so that user can
reach it. That is why a data directory under a home directory is refused.
"""

from __future__ import annotations

import logging
import os
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path

from yuxi.errors import ConfigurationError

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbeddedStatus:
    running: bool
    pid: int | None
    socket_dir: Path | None


def _quiet_import() -> None:
    """Import pgserver without its warning about a missing XDG_RUNTIME_DIR (it falls back to a
    private directory under /tmp, which is what we want)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        import pgserver.postgres_server  # noqa: F401


def _refuse_home(pgdata: Path) -> None:
    if os.name != "posix" or os.geteuid() != 0:
        return
    home = Path.home().resolve()
    if pgdata == home or home in pgdata.parents:
        raise ConfigurationError(
            f"the embedded PostgreSQL data dir {pgdata} is under the home directory {home}; "
            "running as root, pgserver would widen the permissions of every parent directory. "
            "Set YUXI_DATA_DIR to a directory outside the home directory."
        )


class EmbeddedPostgres:
    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata.resolve()
        self.started_by_us = False
        self._url: str | None = None

    def status(self) -> EmbeddedStatus:
        _quiet_import()
        from pgserver.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.pgdata) if self.pgdata.exists() else None
        if info is None or not info.is_running():
            return EmbeddedStatus(False, None, None)
        return EmbeddedStatus(True, info.pid, info.socket_dir)

    def start(self) -> str:
        """Start (or reuse) the server and return a libpq URL for its ``postgres`` database."""
        _refuse_home(self.pgdata)
        _quiet_import()
        from pgserver.postgres_server import get_server

        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        was_running = self.status().running
        if not was_running:
            # pgserver caches one handle per data dir and hands it back without checking that
            # its server still runs (after our own stop()): forget it so it starts again.
            from pgserver.postgres_server import PostgresServer

            PostgresServer._instances.pop(self.pgdata, None)
        # cleanup_mode=None: we decide when to stop, not pgserver's atexit bookkeeping (which
        # never stops a server whose earlier owner crashed).
        server = get_server(self.pgdata, cleanup_mode=None)
        self.started_by_us = not was_running
        self._url = str(server.get_uri())
        _log.info(
            "embedded PostgreSQL %s at %s", "started" if self.started_by_us else "reused", self._url
        )
        return self._url

    @property
    def url(self) -> str:
        if self._url is None:
            raise RuntimeError("embedded PostgreSQL not started")
        return self._url

    def stop(self) -> bool:
        """Fast-shutdown the server on this data directory. Returns whether one was running."""
        if not self.status().running:
            return False
        from pgserver import _commands

        pg_ctl = getattr(_commands, "pg_ctl")  # noqa: B009 - generated at import for each binary

        user = "pgserver" if os.name == "posix" and os.geteuid() == 0 else None
        try:
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=user, timeout=60)
        except subprocess.CalledProcessError:
            if self.status().running:
                raise
        self.started_by_us = False
        return True
