"""The ``yuxi`` command line. Every command goes through :func:`yuxi.bootstrap.bootstrap`.

One module per command group; importing this package registers them all on :data:`app`.
"""

from yuxi.cli import accounts, backup, bench, db, evaluate, memory, serve, threads, users
from yuxi.cli._app import app
from yuxi.cli.serve import DEMO_UID, demo_banner

__all__ = [
    "DEMO_UID",
    "accounts",
    "app",
    "backup",
    "bench",
    "db",
    "demo_banner",
    "evaluate",
    "memory",
    "serve",
    "threads",
    "users",
]
