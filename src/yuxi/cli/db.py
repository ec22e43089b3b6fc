"""``yuxi db``: migrations and the embedded PostgreSQL."""

from __future__ import annotations

import typer

from yuxi.bootstrap import resolve_database_url
from yuxi.cli._app import db_app
from yuxi.db.embedded import EmbeddedPostgres
from yuxi.settings import load_settings


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
    stopped = EmbeddedPostgres(load_settings().pgdata_dir).stop()
    typer.echo("stopped" if stopped else "was not running")


@db_app.command("upgrade-server")
def db_upgrade_server() -> None:
    """Move an embedded data dir made by an older PostgreSQL to this one (the old kept aside)."""
    done = EmbeddedPostgres(load_settings().pgdata_dir).upgrade_server()
    typer.echo(f"upgraded; old data kept at {done.kept_at}" if done else "nothing to upgrade")
