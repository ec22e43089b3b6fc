"""Move an embedded data directory made by an older PostgreSQL (the ``pgserver`` wheel's 16) to
this project's PostgreSQL 18, by dump and restore.

What it guarantees:

* **The old data directory is never deleted or changed in content.** It is renamed aside to
  ``<name>.pg<old>-<UTC time>`` beside the new one, still a working cluster of the old version
  (it is started once with its own binaries to be dumped, so its WAL and logs move on).
* **The new cluster appears whole or not at all.** It is built in a sibling directory
  ``<name>.pg18-new-<UTC time>``, marked complete only after every database was restored, every
  table's row count matched the old server's and the new server shut down cleanly; only then is
  the old directory moved aside and the new one renamed into place. A crash between those two
  renames leaves a complete build and no data directory; the next start finishes the move
  (:func:`finish_interrupted`). An unfinished build, and the dumps of a killed try (every row,
  in a private directory beside it), are never used and are removed at the next try.
* **The new cluster has the builtin ``C.UTF-8`` locale**, like every cluster made here: each
  database is created anew from ``template0`` and filled from its dump, so it does not keep the
  old libc locale (which pg_upgrade would carry over).
* **Without the old binaries nothing is touched**: a :class:`~yuxi.errors.ConfigurationError`
  names the one command that installs them and migrates.

What it does not do:

* It carries roles, their settings and memberships, tablespaces (as a globals dump) and the
  full content of every database that accepts connections (schemas, rows, sequences, indexes,
  grants, extensions). It does not carry a database's own comment, ACL, connection limit or
  ``ALTER DATABASE … SET`` values (``pg_dump`` writes those only with ``--create``, which would
  also bring back the old locale); yuxi sets none of them, and any it finds are logged.
* It does not migrate in place or without a pause: the old server (if one is still running on
  the directory) is stopped first, and the migration takes about as long as a dump and restore.
* Old binaries come only from an installed ``pgserver`` wheel (PostgreSQL 16); a directory of
  another old version is refused.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from yuxi.db import embedded_cluster as cluster
from yuxi.errors import ConfigurationError

_log = logging.getLogger(__name__)

#: The one documented way to make the old binaries available and migrate (README, the error).
UPGRADE_COMMAND = "pip install 'pgserver>=0.1.4,<0.2' && yuxi db upgrade-server"
#: A build is used only when it holds this file (written after its clean shutdown).
COMPLETE_MARKER = "yuxi-upgrade-complete"


@dataclass(frozen=True)
class UpgradeResult:
    old_version: str
    kept_at: Path
    databases: tuple[str, ...]
    rows: int


def old_bindir(major: str) -> Path | None:
    """The binaries of PostgreSQL ``major`` from an installed ``pgserver`` wheel, or ``None``.
    Found without importing the wheel, and checked by asking its server for its version."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "pginstall" / "bin"
        if not (candidate / "postgres").is_file():
            continue
        try:
            version = cluster.run([str(candidate / "postgres"), "--version"], timeout=30)
        except (OSError, RuntimeError):
            continue
        found = re.search(r"\(PostgreSQL\) (\d+)", version)
        if found and found.group(1) == major:
            return candidate
    return None


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def _builds(pgdata: Path) -> list[Path]:
    pattern = f"{pgdata.name}.pg{cluster.PG_MAJOR}-new-*"
    return sorted(p for p in pgdata.parent.glob(pattern) if p.is_dir())


def _fsync_dir(path: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _place(build: Path, pgdata: Path) -> None:
    os.rename(build, pgdata)
    (pgdata / COMPLETE_MARKER).unlink()
    _fsync_dir(pgdata.parent)


def finish_interrupted(pgdata: Path) -> Path | None:
    """When ``pgdata`` is missing but a complete build sits beside it (a crash between the two
    renames), rename the build into place and return it; otherwise change nothing."""
    if pgdata.exists():
        return None
    complete = [b for b in _builds(pgdata) if (b / COMPLETE_MARKER).is_file()]
    if not complete:
        return None
    build = complete[-1]
    _place(build, pgdata)
    _log.warning(
        "embedded PostgreSQL: finished an interrupted upgrade, %s is now %s", build, pgdata
    )
    return build


def refusal(pgdata: Path, version: str) -> ConfigurationError:
    return ConfigurationError(
        f"the embedded PostgreSQL data dir {pgdata} was made by PostgreSQL {version}; this yuxi "
        f"runs PostgreSQL {cluster.PG_MAJOR} and moves the data over by itself, but needs the "
        f"PostgreSQL {version} binaries to read it. Nothing was changed. Install them and "
        f"migrate with: {UPGRADE_COMMAND}"
    )


def _url(sockets: str, database: str) -> str:
    return f"host={sockets} port={cluster.PRIVATE_PORT} user=postgres dbname={database}"


def _databases(sockets: str) -> list[tuple[str, str]]:
    """(name, owner) of every database to carry: all that accept connections but template0."""
    import psycopg  # only a migration needs a client here: a plain start stays light

    with psycopg.connect(_url(sockets, "postgres"), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT datname, pg_get_userbyid(datdba) FROM pg_database "
            "WHERE datallowconn AND datname <> 'template0' ORDER BY datname"
        ).fetchall()
        extras = conn.execute(
            "SELECT d.datname FROM pg_database d WHERE d.datname NOT LIKE 'template_' AND "
            "(d.datacl IS NOT NULL "
            "OR d.datconnlimit <> -1 OR EXISTS (SELECT 1 FROM pg_db_role_setting s "
            "WHERE s.setdatabase = d.oid) OR obj_description(d.oid, 'pg_database') IS NOT NULL)"
        ).fetchall()
    if extras:
        _log.warning(
            "embedded PostgreSQL upgrade: database-level ACLs, settings, comments or connection "
            "limits of %s are not carried over",
            ", ".join(str(r[0]) for r in extras),
        )
    return [(str(name), str(owner)) for name, owner in rows]


def _row_counts(sockets: str, database: str) -> dict[str, int]:
    """Exact row count of every ordinary table of ``database`` (not the system catalogs)."""
    import psycopg

    with psycopg.connect(_url(sockets, database)) as conn:
        tables = conn.execute(
            "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' "
            "AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
            "AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'"
        ).fetchall()
        counts: dict[str, int] = {}
        for (name,) in tables:
            row = conn.execute(f"SELECT count(*) FROM {name}").fetchone()  # noqa: S608
            counts[str(name)] = int(row[0]) if row else 0
    return counts


def _dump(old_bin: Path, old_pgdata: Path, work: Path) -> list[tuple[str, str, dict[str, int]]]:
    """Dump the globals and every database of the old cluster (with this project's newer
    pg_dump, which reads older servers) into ``work``; return (name, owner, row counts)."""
    new_bin = cluster.bindir()
    with cluster.private_server(old_bin, old_pgdata) as sockets:
        common = ["-h", sockets, "-p", cluster.PRIVATE_PORT, "-U", "postgres"]
        cluster.run(
            [
                str(new_bin / "pg_dumpall"),
                *common,
                "--globals-only",
                "-f",
                str(work / "globals.sql"),
            ]
        )
        found = []
        for index, (name, owner) in enumerate(_databases(sockets)):
            out = str(work / f"db{index}.dump")
            cluster.run([str(new_bin / "pg_dump"), *common, "-Fc", "-f", out, "-d", name])
            found.append((name, owner, _row_counts(sockets, name)))
    return found


def _globals_for_new(work: Path) -> Path:
    """The globals dump less its ``CREATE ROLE postgres``: a new cluster already has that role
    (its ``ALTER ROLE`` line, with the attributes, stays)."""
    dumped = (work / "globals.sql").read_text("utf-8")
    lines = [line for line in dumped.splitlines() if line != "CREATE ROLE postgres;"]
    out = work / "globals-new.sql"
    out.write_text("\n".join(lines) + "\n", "utf-8")
    return out


def _restore(build: Path, work: Path, dumped: list[tuple[str, str, dict[str, int]]]) -> int:
    """Restore the dumps into the new cluster in ``build``; check every table's row count."""
    import psycopg
    from psycopg import sql

    new_bin = cluster.bindir()
    rows = 0
    with cluster.private_server(new_bin, build) as sockets:
        common = ["-h", sockets, "-p", cluster.PRIVATE_PORT, "-U", "postgres"]
        psql = [str(new_bin / "psql"), "-X", "-q", *common, "-v", "ON_ERROR_STOP=1"]
        cluster.run([*psql, "-d", "postgres", "-f", str(_globals_for_new(work))])
        with psycopg.connect(_url(sockets, "postgres"), autocommit=True) as conn:
            for name, owner, _ in dumped:
                ident = sql.Identifier(name)
                if name in ("postgres", "template1"):
                    statement = sql.SQL("ALTER DATABASE {} OWNER TO {}")
                else:
                    statement = sql.SQL("CREATE DATABASE {} TEMPLATE template0 OWNER {}")
                conn.execute(statement.format(ident, sql.Identifier(owner)))
        for index, (name, _, counts) in enumerate(dumped):
            restore = [str(new_bin / "pg_restore"), *common, "--exit-on-error", "-d", name]
            cluster.run([*restore, str(work / f"db{index}.dump")])
            now = _row_counts(sockets, name)
            if now != counts:
                differ = sorted(
                    k for k in counts.keys() | now.keys() if counts.get(k) != now.get(k)
                )
                raise RuntimeError(f"row counts differ after restore in {name}: {differ}")
            rows += sum(counts.values())
    return rows


def upgrade(pgdata: Path) -> UpgradeResult:
    """Move the cluster in ``pgdata`` (of an older major version) to this project's version,
    keeping the old one aside (see the module docstring). The caller holds the data-dir lock.
    Raises :class:`ConfigurationError` (changing nothing) when the old binaries are missing."""
    version = cluster.pg_version(pgdata)
    if version is None or version == cluster.PG_MAJOR:
        raise ValueError(f"{pgdata} holds no older cluster")
    if int(version) > int(cluster.PG_MAJOR):
        raise ConfigurationError(
            f"the embedded PostgreSQL data dir {pgdata} was made by PostgreSQL {version}, newer "
            f"than this yuxi's {cluster.PG_MAJOR}; upgrade yuxi"
        )
    old_bin = old_bindir(version)
    if old_bin is None:
        raise refusal(pgdata, version)
    for leftover in _builds(pgdata):  # an unfinished earlier try: never complete, ours alone
        if not (leftover / COMPLETE_MARKER).exists():
            shutil.rmtree(leftover)
    for dumps in pgdata.parent.glob(f".{pgdata.name}.dump-*"):  # copies of a killed try
        shutil.rmtree(dumps, ignore_errors=True)
    stamp = _stamp()
    build = pgdata.parent / f"{pgdata.name}.pg{cluster.PG_MAJOR}-new-{stamp}"
    aside = pgdata.parent / f"{pgdata.name}.pg{version}-{stamp}"
    _log.warning(
        "embedded PostgreSQL: %s was made by PostgreSQL %s; moving it to %s by dump and restore "
        "(the old directory is kept as %s)",
        pgdata,
        version,
        cluster.PG_MAJOR,
        aside,
    )
    _stop_old_server(old_bin, pgdata)
    work = Path(tempfile.mkdtemp(prefix=f".{pgdata.name}.dump-", dir=pgdata.parent))
    try:
        os.chmod(work, 0o700)  # dumps hold every row: readable by us alone
        dumped = _dump(old_bin, pgdata, work)
        cluster.init_cluster(build)
        rows = _restore(build, work, dumped)
        (build / COMPLETE_MARKER).write_text(f"upgraded from {pgdata} ({version})\n", "utf-8")
        _fsync_dir(build)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    os.rename(pgdata, aside)
    _fsync_dir(pgdata.parent)
    _place(build, pgdata)
    names = tuple(name for name, _, _ in dumped)
    _log.warning(
        "embedded PostgreSQL: upgraded %s from %s to %s (%d databases, %d rows); old data kept "
        "at %s",
        pgdata,
        version,
        cluster.PG_MAJOR,
        len(names),
        rows,
        aside,
    )
    return UpgradeResult(old_version=version, kept_at=aside, databases=names, rows=rows)


def _stop_old_server(old_bin: Path, pgdata: Path) -> None:
    """A server of the old version still running on the directory (left by an older yuxi) is
    stopped with its own pg_ctl: a cluster is dumped from a server this migration started."""
    if not (pgdata / "postmaster.pid").exists():
        return
    pg_ctl = str(old_bin / "pg_ctl")
    user = cluster.owner_of(pgdata)
    try:
        cluster.run([pg_ctl, "-D", str(pgdata), "status"], user=user, timeout=30)
    except RuntimeError:
        return  # a stale postmaster.pid: nothing runs
    _log.warning("embedded PostgreSQL: stopping the PostgreSQL server still running on %s", pgdata)
    cluster.run([pg_ctl, "-D", str(pgdata), "-w", "-t", "120", "-m", "fast", "stop"], user=user)
