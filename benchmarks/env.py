"""One PostgreSQL and one data directory for a whole benchmark run.

The server is ``YUXI_BENCH_DATABASE_URL`` (or ``--database-url``) when given, else an embedded
server started under a fresh temporary directory outside any home directory (run as root, the
embedded server's system user needs every parent of its data directory widened). Either way the
run gets a fresh database ``yuxi_bench_<hex>`` migrated to head, dropped at the end unless
``--keep-db``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from yuxi.bootstrap import Container, bootstrap
from yuxi.db.embedded import EmbeddedPostgres
from yuxi.db.engine import libpq_url, sqlalchemy_url
from yuxi.db.migrate import upgrade_sync
from yuxi.services.lookback.service import LookbackService
from yuxi.services.unit_of_work import unit_of_work_factory
from yuxi.settings import Settings

ENV_URL = "YUXI_BENCH_DATABASE_URL"
#: The options every engine of the app sets (yuxi.db.engine.create_engine); kept identical.
APP_PG_OPTIONS = "-c lock_timeout=15000 -c statement_timeout=60000"


def with_database(url: str, name: str) -> str:
    return libpq_url(make_url(url).set(database=name).render_as_string(hide_password=False))


def temp_root_outside_home() -> Path:
    """A fresh temp directory that is not under ``$HOME`` (falls back to /var/tmp, /tmp)."""
    home = Path.home().resolve()
    candidates = [Path(tempfile.gettempdir()), Path("/var/tmp"), Path("/tmp")]  # noqa: S108
    for base in candidates:
        base = base.resolve()
        if base == home or home in base.parents or not base.is_dir():
            continue
        return Path(tempfile.mkdtemp(prefix="yuxi-bench-", dir=base))
    raise RuntimeError("no temporary directory outside the home directory")


def filesystem_of(path: Path) -> str:
    """``fstype (device)`` of the mount holding ``path``, from /proc/mounts (best effort)."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return "unknown"
    target = str(path.resolve())
    best = ("", "unknown", "?")
    for line in mounts:
        parts = line.split()
        if len(parts) < 3:
            continue
        device, mount, fstype = parts[0], parts[1], parts[2]
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) > len(best[0]):
            best = (mount, fstype, device)
    return f"{best[1]} ({best[2]} on {best[0]})"


@dataclass
class BenchEnv:
    server_url: str
    database_url: str
    db_name: str
    server_kind: str  # "embedded" | "external"
    tmp_root: Path
    data_dir: Path
    container: Container
    embedded: EmbeddedPostgres | None = None
    created_db: bool = True
    info: dict[str, Any] = field(default_factory=dict)
    _engines: list[AsyncEngine] = field(default_factory=list)

    def lookback_service(self, *, extra_options: str = "", pool_size: int = 5) -> LookbackService:
        """A LookbackService on its own engine (same options as the app's, plus ``extra``)."""
        engine = create_async_engine(
            sqlalchemy_url(self.database_url),
            pool_size=pool_size,
            max_overflow=pool_size,
            pool_pre_ping=True,
            connect_args={"options": f"{APP_PG_OPTIONS} {extra_options}".strip()},
        )
        self._engines.append(engine)
        sessions = async_sessionmaker(engine, expire_on_commit=False)
        return LookbackService(unit_of_work_factory(sessions))

    def sync_connect(self, **kwargs: Any) -> psycopg.Connection[Any]:
        return psycopg.connect(self.database_url, **kwargs)


def _prepare_dir(path: Path) -> str:
    path = path.resolve()
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def _server_facts(url: str) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        version = conn.execute("SHOW server_version").fetchone()
        settings = {
            name: conn.execute(f"SHOW {name}").fetchone()
            for name in ("shared_buffers", "work_mem", "synchronous_commit", "fsync", "jit")
        }
        trgm = conn.execute(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_trgm'"
        ).fetchone()
        ctype = conn.execute(
            "SELECT datctype FROM pg_database WHERE datname = current_database()"
        ).fetchone()
    return {
        "server_version": version[0] if version else "?",
        "settings": {k: (v[0] if v else None) for k, v in settings.items()},
        "pg_trgm_available": trgm is not None,
        "datctype": ctype[0] if ctype else None,
    }


async def open_env(
    *, database_url: str | None, data_dir: Path | None, pool_size: int = 20
) -> BenchEnv:
    tmp_root = temp_root_outside_home()
    embedded: EmbeddedPostgres | None = None
    try:
        url = database_url or os.environ.get(ENV_URL) or ""
        if url.strip():
            server_url, kind = libpq_url(url.strip()), "external"
        else:
            embedded = EmbeddedPostgres(tmp_root / "pgdata")
            server_url = await asyncio.to_thread(embedded.start)
            kind = "embedded"
        db_name = f"yuxi_bench_{uuid.uuid4().hex[:12]}"
        created = True
        try:
            with psycopg.connect(server_url, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{db_name}"')
            db_url = with_database(server_url, db_name)
        except psycopg.Error as exc:  # no CREATEDB: use the given database as it is
            print(f"[bench] cannot create a database ({exc}); using the given one as is")
            created, db_url = False, server_url
            db_name = make_url(server_url).database or "?"
        await asyncio.to_thread(upgrade_sync, db_url)
        workspace_dir = await asyncio.to_thread(_prepare_dir, data_dir or tmp_root / "data")
        container = await bootstrap(
            Settings(database_url=db_url, data_dir=Path(workspace_dir), db_pool_size=pool_size)
        )
    except BaseException:
        if embedded is not None:
            with contextlib.suppress(Exception):
                embedded.stop()
        shutil.rmtree(tmp_root, ignore_errors=True)
        raise
    env = BenchEnv(
        server_url=server_url,
        database_url=db_url,
        db_name=db_name,
        server_kind=kind,
        tmp_root=tmp_root,
        data_dir=Path(workspace_dir),
        container=container,
        embedded=embedded,
        created_db=created,
    )
    env.info = {
        "server_kind": kind,
        "database": db_name,
        **(await asyncio.to_thread(_server_facts, db_url)),
        "workspace_dir": workspace_dir,
        "workspace_filesystem": filesystem_of(Path(workspace_dir)),
    }
    return env


async def close_env(env: BenchEnv, *, keep_db: bool = False) -> None:
    for engine in env._engines:
        await engine.dispose()
    await env.container.aclose()
    if env.created_db and not keep_db:
        with (
            contextlib.suppress(psycopg.Error),
            psycopg.connect(env.server_url, autocommit=True) as conn,
        ):
            conn.execute(f'DROP DATABASE IF EXISTS "{env.db_name}" WITH (FORCE)')
    if env.embedded is not None and not keep_db:
        await asyncio.to_thread(env.embedded.stop)
    if not keep_db:
        shutil.rmtree(env.tmp_root, ignore_errors=True)
