"""``yuxi users export`` and ``yuxi users delete``: a whole account, for an operator."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import typer

from yuxi.bootstrap import Container
from yuxi.cli._app import _with_container, users_app


@users_app.command("export")
def users_export(
    uid: str = typer.Argument(..., metavar="UID"),
    out: Path = typer.Option(..., "--out", metavar="FILE", help="the zip to write"),
) -> None:
    """Write everything a user owns to one zip (as GET /api/v1/me/export does for the user):
    memory with its versions, threads with messages and tool calls, runs with usage, files."""
    from yuxi.services.accounts import AccountExport

    partial = out.with_name(f".{out.name}.partial")

    async def export(c: Container) -> AccountExport:
        with partial.open("wb") as fh:
            result = await c.services.accounts.export_account(uid, fh)
            fh.flush()
            os.fsync(fh.fileno())
        return result

    try:
        result = _with_container(export, migrate=True)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        raise
    partial.replace(out)  # the zip appears whole or not at all
    counts = ", ".join(f"{k} {v}" for k, v in result.counts.items())
    typer.echo(f"wrote {out} ({out.stat().st_size} bytes): {counts}")
    for path in result.skipped_files:
        typer.echo(f"skipped (over the file limit): {path}", err=True)


@users_app.command("delete")
def users_delete(
    uid: str = typer.Argument(..., metavar="UID"),
    yes: bool = typer.Option(False, "--yes", help="do not ask for confirmation"),
) -> None:
    """Delete a user and everything they own: their runs are stopped and their event streams
    end first; then threads, messages, tool calls, runs, events, checkpoints, memory versions,
    tokens, login codes and the workspace directory go. It cannot be undone."""
    from yuxi.services.accounts import DeletedAccount
    from yuxi.services.user_service import UserView

    if not yes:

        async def look(c: Container) -> UserView:
            return await c.services.users.get_user(uid)

        user = _with_container(look, migrate=True)
        typer.confirm(f"Delete user {user.uid} ({user.name}) and everything they own?", abort=True)

    async def delete(c: Container) -> DeletedAccount:
        return await c.services.accounts.delete_account(uid)

    deleted = _with_container(delete, migrate=True)
    rows = ", ".join(f"{table} {n}" for table, n in deleted.rows.items() if n)
    typer.echo(
        f"deleted {deleted.uid}: {rows}; files {deleted.files}; "
        f"runs stopped {deleted.runs_stopped}; tokens revoked {deleted.tokens_revoked}"
    )
    if deleted.runs_unsettled:
        typer.echo(
            f"{deleted.runs_unsettled} run(s) had not stopped in time; their writes are refused",
            err=True,
        )
