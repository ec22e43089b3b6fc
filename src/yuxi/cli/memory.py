"""``yuxi memory``: an operator's view of one user's memory (the export document)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from yuxi.bootstrap import Container
from yuxi.cli._app import _typer, _with_container, app

memory_app = _typer("A user's memory (MEMORY.md and its versions): export.")
app.add_typer(memory_app, name="memory")


@memory_app.command("export")
def memory_export(
    uid: str = typer.Argument(..., metavar="UID"),
    out: Path | None = typer.Option(
        None, "--out", metavar="FILE", help="write here", show_default="standard output"
    ),
    markdown: bool = typer.Option(
        False, "--markdown", help="only MEMORY.md itself, not the export document"
    ),
) -> None:
    """The memory export document (JSON: the file, its ETag, every retained version with its
    provenance and diff, the lint), exactly what GET /api/v1/memory/export answers the user."""
    from yuxi.services.memory import encode_export

    async def export(c: Container) -> bytes:
        await c.services.users.get_user(uid)  # an unknown uid is an error, not an empty export
        if markdown:
            data, _ = await c.services.memory_versions.export_markdown(uid)
            return data
        return encode_export(await c.services.memory_versions.export(uid), indent=2) + b"\n"

    data = _with_container(export, migrate=True)
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    out.write_bytes(data)
    typer.echo(f"wrote {len(data)} bytes to {out}", err=True)
