"""The ``yuxi`` command line. Every command goes through :func:`yuxi.bootstrap.bootstrap`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import typer

from yuxi.bootstrap import Container, bootstrap, resolve_database_url
from yuxi.db.embedded import EmbeddedPostgres
from yuxi.settings import load_settings

app = typer.Typer(help="Yuxi Memory: a multi-user agent server with user-level memory.")
db_app = typer.Typer(help="Database: migrations and the embedded PostgreSQL.")
users_app = typer.Typer(help="Users and API tokens.")
app.add_typer(db_app, name="db")
app.add_typer(users_app, name="users")

T = TypeVar("T")


def _with_container(fn: Callable[[Container], Awaitable[T]], *, migrate: bool = False) -> T:
    async def main() -> T:
        container = await bootstrap(migrate=migrate)
        try:
            return await fn(container)
        finally:
            await container.aclose()

    return asyncio.run(main())


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply every migration (starts the embedded PostgreSQL when no URL is configured)."""
    from yuxi.db.migrate import upgrade_sync

    url, embedded = resolve_database_url(load_settings())
    upgrade_sync(url)
    where = "embedded PostgreSQL" if embedded else "external PostgreSQL"
    typer.echo(f"database at head ({where})")


@db_app.command("status")
def db_status() -> None:
    """Show whether the embedded PostgreSQL is running."""
    settings = load_settings()
    if settings.database_url:
        typer.echo("external PostgreSQL (YUXI_DATABASE_URL is set)")
        return
    status = EmbeddedPostgres(settings.pgdata_dir).status()
    state = f"running (pid {status.pid})" if status.running else "stopped"
    typer.echo(f"embedded PostgreSQL at {settings.pgdata_dir}: {state}")


@db_app.command("stop")
def db_stop() -> None:
    """Stop the embedded PostgreSQL, whoever started it."""
    settings = load_settings()
    stopped = EmbeddedPostgres(settings.pgdata_dir).stop()
    typer.echo("stopped" if stopped else "was not running")


@users_app.command("create")
def users_create(name: str) -> None:
    """Create a user and print a new API token (shown once)."""
    from yuxi.repositories.user_repository import UserRepository

    async def create(c: Container) -> tuple[str, str]:
        async with c.session_factory() as session, session.begin():
            repo = UserRepository(session)
            user = await repo.create_user(name)
            token = await repo.add_token(user.uid)
        await c.workspace(user.uid).ensure_user_workspace()
        return user.uid, token

    uid, token = _with_container(create, migrate=True)
    typer.echo(f"uid:   {uid}\ntoken: {token}")


@app.command("run")
def run() -> None:
    """Development run: embedded PostgreSQL, migrations, then the server."""
    settings = load_settings()
    url, embedded = resolve_database_url(settings)
    from yuxi.db.migrate import upgrade_sync

    upgrade_sync(url)
    where = (
        f"embedded PostgreSQL under {settings.pgdata_dir}" if embedded else "external PostgreSQL"
    )
    typer.echo(f"database ready ({where}), migrations applied.")
    typer.echo(
        "The HTTP server and web UI are not built yet (see the open issues); "
        "`yuxi users create NAME` works today."
    )
    if embedded is not None and embedded.started_by_us:
        embedded.stop()
