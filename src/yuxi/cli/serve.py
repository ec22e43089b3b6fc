"""``yuxi serve``, ``yuxi worker`` and ``yuxi run``: serving and working."""

from __future__ import annotations

import asyncio
import signal

import typer

from yuxi.api.access_log import redact_credentials
from yuxi.bootstrap import Container, bootstrap
from yuxi.cli._app import _with_container, app
from yuxi.cli.process import run_on, settle_garbage_collector
from yuxi.cli.users import _when, login_url, public_base_url
from yuxi.observability.logs import configure_logging
from yuxi.settings import load_settings
from yuxi.utils.ports import listen_problem

_HOST = typer.Option(
    None, metavar="HOST", help="address to listen on", show_default="YUXI_HOST or 127.0.0.1"
)
_PORT = typer.Option(None, min=1, max=65535, metavar="PORT", show_default="YUXI_PORT or 8000")


def require_free_port(host: str, port: int) -> None:
    """Exit 1 with a hint unless ``host:port`` can be bound: checked before anything starts
    (embedded PostgreSQL, migrations, a login link), so a second ``yuxi run`` stops cleanly."""
    problem = listen_problem(host, port)
    if problem is not None:
        typer.echo(f"error: {problem}; set YUXI_PORT or pass --port", err=True)
        raise typer.Exit(code=1)


def _serve(host: str | None, port: int | None, *, demo: bool) -> None:
    """Serve the API, the UI and the worker pool until stopped; with ``demo``, first make sure
    the demo user exists and print a login link for it."""
    settings = load_settings()
    configure_logging(settings.log_format, redact=redact_credentials)
    host, port = host or settings.host, port or settings.port
    require_free_port(host, port)

    async def main() -> None:
        container = await bootstrap(settings, migrate=True)
        settle_garbage_collector()
        try:
            base_url = public_base_url(settings, host, port)
            banner = await demo_banner(container, base_url=base_url) if demo else ""
            from yuxi.api.server import serve_app  # uvicorn and the app: only when serving

            await serve_app(container, host=host, port=port, banner=banner)
        finally:
            await container.aclose(stop_embedded=True)

    run_on(settings.event_loop, main())


@app.command("serve")
def serve(host: str | None = _HOST, port: int | None = _PORT) -> None:
    """The HTTP API, the web UI and the in-process worker pool."""
    _serve(host, port, demo=False)


@app.command("worker")
def worker(
    count: int = typer.Option(1, min=1, max=64, metavar="N", help="how many workers"),
) -> None:
    """Run workers in this process (alongside or instead of the server's pool)."""
    from yuxi.bootstrap import run_workers

    settings = load_settings()
    configure_logging(settings.log_format, redact=redact_credentials)

    async def main(c: Container) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        settle_garbage_collector()
        typer.echo(f"{count} worker(s) running; Ctrl-C to stop")
        await run_workers(c, count, stop)

    _with_container(main, migrate=True, settings=settings, event_loop=settings.event_loop)


DEMO_UID = "demo"


async def demo_banner(container: Container, *, base_url: str) -> str:
    """Make sure the demo user exists and describe a fresh single-use login link for it. No
    token is minted here: the browser gets an expiring session token by exchanging the code,
    so restarts never pile up valid credentials, and the link is spent once it is used."""
    await container.services.users.ensure_user(DEMO_UID, name="Demo user")
    issued = await container.services.users.issue_login_code(DEMO_UID)
    where = "embedded PostgreSQL" if container.embedded else "external PostgreSQL"
    return (
        f"Yuxi Memory on {where}; migrations applied; demo user '{DEMO_UID}'.\n"
        f"Open: {login_url(base_url, issued.code)}\n"
        f"(single use, valid until {_when(issued.expires_at)}; "
        f"another: yuxi users login-link {DEMO_UID})\n"
    )


@app.command("run")
def run(host: str | None = _HOST, port: int | None = _PORT) -> None:
    """Development run: embedded PostgreSQL, migrations, a demo user, then the server."""
    _serve(host, port, demo=True)
