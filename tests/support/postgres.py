"""A real PostgreSQL for the integration, e2e and browser tiers.

``YUXI_TEST_DATABASE_URL`` when set; otherwise a throwaway embedded server for the session. Each
test gets its own database cloned from a migrated template (``CREATE DATABASE … TEMPLATE``), so
tests are isolated and may use as many connections and processes as they like.

If no server can be had the session fails loudly: an integration test is never silently skipped.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from yuxi.bootstrap import Container, bootstrap
from yuxi.db.embedded import EmbeddedPostgres
from yuxi.db.engine import libpq_url
from yuxi.db.migrate import upgrade_sync
from yuxi.settings import Settings


def with_database(url: str, name: str) -> str:
    return libpq_url(make_url(url).set(database=name).render_as_string(hide_password=False))


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    external = os.environ.get("YUXI_TEST_DATABASE_URL")
    if external:
        url = libpq_url(external)
        with psycopg.connect(url, connect_timeout=10) as conn:
            conn.execute("SELECT 1")
        print(f"\n[yuxi] integration tier on external PostgreSQL {url}")
        yield url
        return
    base = Path(tempfile.mkdtemp(prefix="yuxi-test-pg-"))
    server = EmbeddedPostgres(base / "pgdata")
    try:
        url = server.start()
    except Exception as exc:  # fail loudly, never skip
        pytest.fail(f"could not start the embedded PostgreSQL for the integration tier: {exc}")
    with psycopg.connect(url) as conn:
        version = conn.execute("SHOW server_version").fetchone()
    print(f"\n[yuxi] integration tier on embedded PostgreSQL {version[0] if version else '?'}")
    try:
        yield url
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


def _admin(url: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(url, autocommit=True)


@pytest.fixture(scope="session")
def template_database(pg_server_url: str) -> Iterator[str]:
    name = f"yuxi_tpl_{uuid.uuid4().hex[:12]}"
    with _admin(pg_server_url) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    upgrade_sync(with_database(pg_server_url, name))
    yield name
    with _admin(pg_server_url) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def database_url(pg_server_url: str, template_database: str) -> Iterator[str]:
    """A fresh, migrated database for one test."""
    name = f"yuxi_t_{uuid.uuid4().hex[:16]}"
    with _admin(pg_server_url) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_database}"')
    yield with_database(pg_server_url, name)
    with _admin(pg_server_url) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def empty_database_url(pg_server_url: str) -> Iterator[str]:
    """A fresh database with no schema (for migration tests)."""
    name = f"yuxi_e_{uuid.uuid4().hex[:16]}"
    with _admin(pg_server_url) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield with_database(pg_server_url, name)
    with _admin(pg_server_url) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=database_url, data_dir=tmp_path / "data", db_pool_size=20)


@pytest.fixture
async def container(settings: Settings) -> AsyncIterator[Container]:
    c = await bootstrap(settings)
    try:
        yield c
    finally:
        await c.aclose()
