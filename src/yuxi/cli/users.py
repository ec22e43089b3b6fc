"""``yuxi users`` and ``yuxi tokens``: users, login links and tokens."""

from __future__ import annotations

from datetime import UTC, datetime

import typer

from yuxi.bootstrap import Container
from yuxi.cli._app import _with_container, tokens_app, users_app
from yuxi.settings import Settings, load_settings


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


def public_base_url(settings: Settings, host: str | None = None, port: int | None = None) -> str:
    """Where people open the UI: ``YUXI_PUBLIC_URL`` when set, else ``http://host:port`` of this
    server (``host``/``port`` as passed on its command line, else the settings). A wildcard
    listen address is no place to open: it becomes this machine's loopback."""
    if settings.public_url is not None:
        return settings.public_url
    host, port = host or settings.host, port or settings.port
    host = _LOOPBACK_FOR_WILDCARD.get(host, host)
    if ":" in host:  # an IPv6 literal goes in brackets in a URL
        host = f"[{host}]"
    return f"http://{host}:{port}"


#: Listen addresses that mean "every interface" (read here, never bound) and the address on this
#: machine that reaches them.
_LOOPBACK_FOR_WILDCARD = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}  # noqa: S104


def login_url(base_url: str, code: str) -> str:
    """The login link for a login code (never for a token: a URL ends up in logs)."""
    return f"{base_url}/?login={code}"


@users_app.command("login-link")
def users_login_link(uid: str = typer.Argument(..., metavar="UID")) -> None:
    """Print a single-use login link for the web UI (valid a few minutes, once), at
    YUXI_PUBLIC_URL, else at YUXI_HOST:YUXI_PORT."""
    settings = load_settings()

    async def link(c: Container) -> str:
        issued = await c.services.users.issue_login_code(uid)
        return login_url(public_base_url(settings), issued.code)

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
