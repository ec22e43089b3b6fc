"""The root command, its groups and the helpers every command shares (one container per
command, user-facing errors as one line)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import typer

from yuxi import __version__
from yuxi.bootstrap import Container, bootstrap
from yuxi.cli.process import run_on
from yuxi.errors import ConfigurationError, YuxiError
from yuxi.settings import EventLoop, Settings


def _typer(help_text: str) -> typer.Typer:
    """A command group with plain help (no rich panels): readable metavars such as HOST and N
    instead of bare <str> labels, and the defaults."""
    return typer.Typer(
        help=help_text, rich_markup_mode=None, context_settings={"max_content_width": 100}
    )


app = _typer("Yuxi Memory: a multi-user agent server with user-level memory.")
db_app = _typer("Database: migrations and the embedded PostgreSQL.")
users_app = _typer("Users and login links.")
tokens_app = _typer("A user's API and browser session tokens: list, create, revoke.")
app.add_typer(db_app, name="db")
app.add_typer(users_app, name="users")
app.add_typer(tokens_app, name="tokens")


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"yuxi {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Show the version and exit.",
    ),
) -> None:
    pass


T = TypeVar("T")


def _with_container(
    fn: Callable[[Container], Awaitable[T]],
    *,
    migrate: bool = False,
    settings: Settings | None = None,
    event_loop: EventLoop = "asyncio",
) -> T:
    """Run ``fn`` with a container (of ``settings``, loaded here when not given), on the event
    loop ``event_loop`` names (a short command keeps the standard one:
    :mod:`yuxi.cli.process`); a user-facing Yuxi error (an unknown user, a bad value) is
    printed as one line and exits 1."""

    async def main() -> T:
        container = await bootstrap(settings, migrate=migrate)
        try:
            return await fn(container)
        finally:
            await container.aclose()

    try:
        return run_on(event_loop, main())
    except YuxiError as exc:
        if isinstance(exc, ConfigurationError):
            raise
        typer.echo(f"error ({exc.code}): {exc}", err=True)
        raise typer.Exit(code=1) from exc
