"""The ``yuxi`` command line. Every command goes through :func:`yuxi.bootstrap.bootstrap`."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import typer

from yuxi import __version__
from yuxi.api.access_log import redact_credentials
from yuxi.bootstrap import Container, bootstrap, resolve_database_url
from yuxi.db.embedded import EmbeddedPostgres
from yuxi.errors import ConfigurationError, YuxiError
from yuxi.observability.logs import configure_logging
from yuxi.settings import load_settings
from yuxi.utils.ports import listen_problem


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


def _with_container(fn: Callable[[Container], Awaitable[T]], *, migrate: bool = False) -> T:
    """Run ``fn`` with a container; a user-facing Yuxi error (an unknown user, a bad value) is
    printed as one line and exits 1."""

    async def main() -> T:
        container = await bootstrap(migrate=migrate)
        try:
            return await fn(container)
        finally:
            await container.aclose()

    try:
        return asyncio.run(main())
    except YuxiError as exc:
        if isinstance(exc, ConfigurationError):
            raise
        typer.echo(f"error ({exc.code}): {exc}", err=True)
        raise typer.Exit(code=1) from exc


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


@users_app.command("create")
def users_create(
    name: str = typer.Argument(..., metavar="NAME", help="the user's name (unique, not blank)"),
) -> None:
    """Create a user and print a new API token (shown once)."""
    from yuxi.services.user_service import IssuedToken

    async def create(c: Container) -> IssuedToken:
        return await c.services.users.create_user(name)

    created = _with_container(create, migrate=True)
    typer.echo(f"uid:   {created.uid}\ntoken: {created.token}")


def _when(moment: datetime | None, never: str = "-") -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ") if moment else never


@users_app.command("list")
def users_list() -> None:
    """Every user: uid, name, created."""
    from yuxi.services.user_service import UserView

    async def listing(c: Container) -> list[UserView]:
        return await c.services.users.list_users()

    users = _with_container(listing, migrate=True)
    typer.echo(f"{'uid':<36}  {'created':<20}  name")
    for user in users:
        typer.echo(f"{user.uid:<36}  {_when(user.created_at):<20}  {user.name}")


def login_url(host: str, port: int, code: str) -> str:
    """The login link for a login code (never for a token: a URL ends up in logs)."""
    return f"http://{host}:{port}/?login={code}"


@users_app.command("login-link")
def users_login_link(uid: str = typer.Argument(..., metavar="UID")) -> None:
    """Print a single-use login link for the web UI (valid a few minutes, once)."""
    settings = load_settings()

    async def link(c: Container) -> str:
        issued = await c.services.users.issue_login_code(uid)
        return login_url(settings.host, settings.port, issued.code)

    typer.echo(_with_container(link, migrate=True))


@tokens_app.command("list")
def tokens_list(uid: str = typer.Argument(..., metavar="UID")) -> None:
    """A user's tokens: id, state, label, created, expires, revoked (never the token itself)."""
    from yuxi.services.user_service import TokenView

    async def listing(c: Container) -> list[TokenView]:
        return await c.services.users.list_tokens(uid)

    tokens = _with_container(listing, migrate=True)
    typer.echo(f"{'id':>6}  {'state':<7}  {'created':<20}  {'expires':<20}  {'revoked':<20}  label")
    for t in tokens:
        state = "active" if t.active else ("revoked" if t.revoked_at else "expired")
        typer.echo(
            f"{t.id:>6}  {state:<7}  {_when(t.created_at):<20}  {_when(t.expires_at, 'never'):<20}"
            f"  {_when(t.revoked_at):<20}  {t.label}"
        )


@tokens_app.command("create")
def tokens_create(
    uid: str = typer.Argument(..., metavar="UID"),
    label: str = typer.Option("cli", metavar="LABEL", help="what the token is for"),
    days: int | None = typer.Option(
        None, metavar="N", help="expire after N days", show_default="never"
    ),
) -> None:
    """A new API token for an existing user (printed once, stored hashed)."""
    from yuxi.services.user_service import IssuedToken

    async def create(c: Container) -> IssuedToken:
        return await c.services.users.create_token(uid, label=label, expires_in_days=days)

    issued = _with_container(create, migrate=True)
    typer.echo(f"token:   {issued.token}\nexpires: {_when(issued.expires_at, 'never')}")


@tokens_app.command("revoke")
def tokens_revoke(
    uid: str = typer.Argument(..., metavar="UID"),
    token_id: int | None = typer.Option(
        None, "--id", metavar="ID", help="only this token", show_default="all of them"
    ),
) -> None:
    """Revoke all of a user's tokens, or the one --id. Open event streams on them end."""

    async def revoke(c: Container) -> list[int]:
        return await c.services.users.revoke_tokens(uid, token_id)

    revoked = _with_container(revoke, migrate=True)
    typer.echo(f"revoked {len(revoked)} token(s)" + (f": {revoked}" if revoked else ""))


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


@app.command("serve")
def serve(host: str | None = _HOST, port: int | None = _PORT) -> None:
    """The HTTP API, the web UI and the in-process worker pool."""
    settings = load_settings()
    configure_logging(settings.log_format, redact=redact_credentials)
    host, port = host or settings.host, port or settings.port
    require_free_port(host, port)

    async def main() -> None:
        container = await bootstrap(settings, migrate=True)
        try:
            from yuxi.api.server import serve_app  # uvicorn and the app: only when serving

            await serve_app(container, host=host, port=port)
        finally:
            await container.aclose(stop_embedded=True)

    asyncio.run(main())


@app.command("worker")
def worker(
    count: int = typer.Option(1, min=1, max=64, metavar="N", help="how many workers"),
) -> None:
    """Run workers in this process (alongside or instead of the server's pool)."""
    from yuxi.bootstrap import run_workers

    configure_logging(load_settings().log_format, redact=redact_credentials)

    async def main(c: Container) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        typer.echo(f"{count} worker(s) running; Ctrl-C to stop")
        await run_workers(c, count, stop)

    _with_container(main, migrate=True)


eval_app = _typer("Evaluation runs (agent_evaluation threads, hidden from history).")
app.add_typer(eval_app, name="eval")


@eval_app.command("run")
def eval_run(
    file: Path = typer.Argument(
        ..., exists=True, dir_okay=False, readable=True, metavar="FILE.jsonl"
    ),
    uid: str = typer.Option(..., metavar="UID", help="the user whose agent is evaluated"),
    timeout: float = typer.Option(120.0, metavar="SECONDS", help="to wait for each run"),
) -> None:
    """Run each JSONL line {"input": str, "expect"?: str} in its own agent_evaluation
    thread (in-process workers) and print a result table."""
    import json

    from yuxi.bootstrap import run_workers
    from yuxi.vocabulary import ACTIVE_RUN_STATUSES

    cases = []
    for number, line in enumerate(file.read_text("utf-8").splitlines(), start=1):
        if line.strip():
            try:
                case = json.loads(line)
                if not isinstance(case, dict) or not isinstance(case.get("input"), str):
                    raise ValueError('each line needs an "input" string')
            except ValueError as exc:
                raise typer.BadParameter(f"line {number}: {exc}") from exc
            cases.append((number, case))

    async def main(c: Container) -> int:
        chat = c.services.chat
        stop = asyncio.Event()
        pool = asyncio.create_task(run_workers(c, 2, stop))
        failures = 0
        typer.echo(f"{'line':>4}  {'status':<11}  {'check':<5}  reply")
        try:
            for number, case in cases:
                run, _ = await chat.submit_agent_call(uid, case["input"], source="agent_evaluation")
                deadline = asyncio.get_running_loop().time() + timeout
                while run.status in ACTIVE_RUN_STATUSES:
                    if asyncio.get_running_loop().time() > deadline:
                        break
                    await asyncio.sleep(0.1)
                    run = await chat.get_run(uid, run.id)
                reply = str((run.output or {}).get("reply", ""))
                expect = case.get("expect")
                ok = run.status == "completed" and (expect is None or str(expect) in reply)
                failures += 0 if ok else 1
                check = "-" if expect is None else ("pass" if ok else "FAIL")
                shown = reply.replace("\n", " ")[:70]
                typer.echo(f"{number:>4}  {run.status:<11}  {check:<5}  {shown}")
        finally:
            stop.set()
            await pool
        typer.echo(f"{len(cases) - failures} passed, {failures} failed")
        return failures

    failed = _with_container(main, migrate=True)
    raise typer.Exit(code=1 if failed else 0)


@app.command("bench", context_settings={"ignore_unknown_options": True})
def bench(
    args: list[str] = typer.Argument(None, metavar="FLAGS", hidden=True),
) -> None:
    """Run the benchmark suite (python -m benchmarks, from the repository root), passing
    FLAGS on, e.g. --quick; yuxi bench -- --help lists them."""
    import importlib.util
    import runpy
    import sys

    # The suite lives in the repository, not in the package: look for it where we are run.
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    if importlib.util.find_spec("benchmarks") is None:
        typer.echo("error: no benchmarks package here; run yuxi bench from the repo root", err=True)
        raise typer.Exit(code=1) from None
    sys.argv = ["benchmarks", *(args or [])]
    runpy.run_module("benchmarks", run_name="__main__")


DEMO_UID = "demo"


async def demo_banner(container: Container, *, host: str, port: int) -> str:
    """Make sure the demo user exists and describe a fresh single-use login link for it. No
    token is minted here: the browser gets an expiring session token by exchanging the code,
    so restarts never pile up valid credentials, and the link is spent once it is used."""
    await container.services.users.ensure_user(DEMO_UID, name="Demo user")
    issued = await container.services.users.issue_login_code(DEMO_UID)
    where = "embedded PostgreSQL" if container.embedded else "external PostgreSQL"
    return (
        f"Yuxi Memory on {where}; migrations applied; demo user '{DEMO_UID}'.\n"
        f"Open: {login_url(host, port, issued.code)}\n"
        f"(single use, valid until {_when(issued.expires_at)}; "
        f"another: yuxi users login-link {DEMO_UID})\n"
    )


@app.command("run")
def run(host: str | None = _HOST, port: int | None = _PORT) -> None:
    """Development run: embedded PostgreSQL, migrations, a demo user, then the server."""
    settings = load_settings()
    configure_logging(settings.log_format, redact=redact_credentials)
    host, port = host or settings.host, port or settings.port
    require_free_port(host, port)

    async def main() -> None:
        container = await bootstrap(settings, migrate=True)
        try:
            banner = await demo_banner(container, host=host, port=port)
            from yuxi.api.server import serve_app

            await serve_app(container, host=host, port=port, banner=banner)
        finally:
            await container.aclose(stop_embedded=True)

    asyncio.run(main())


if __name__ == "__main__":
    app()
