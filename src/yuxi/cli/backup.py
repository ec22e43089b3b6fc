"""``yuxi backup`` and ``yuxi restore``: one archive of the database and every workspace,
taken while the server runs, and put back into an empty data dir and database."""

from __future__ import annotations

from pathlib import Path

import typer

from yuxi.bootstrap import Container
from yuxi.cli._app import _with_container, app


def _progress(line: str) -> None:
    typer.echo(line, err=True)


@app.command("backup")
def backup(
    out: Path = typer.Option(
        ..., "--out", metavar="FILE", help="the archive to write (a tar file; must not exist)"
    ),
) -> None:
    """Write a consistent backup of the database and every workspace while the server runs."""
    from yuxi.services.backup import BackupResult

    async def run(c: Container) -> BackupResult:
        return await c.services.backup.create(out, progress=_progress)

    done = _with_container(run)
    typer.echo(
        f"backup {done.path}: {done.bytes} bytes, {done.users} users, {done.files} files, "
        f"{sum(done.tables.values())} rows in {len(done.tables)} tables, "
        f"{done.memory_from_snapshot} memory files taken from the snapshot, "
        f"{done.seconds:.1f} s"
    )


@app.command("restore")
def restore(
    archive: Path = typer.Argument(..., metavar="FILE", help="an archive made by yuxi backup"),
    force: bool = typer.Option(
        False, "--force", help="replace whatever the database and the data dir hold"
    ),
    check: bool = typer.Option(False, "--check", help="only verify the archive (writes nothing)"),
) -> None:
    """Restore a backup into an empty data dir and database (the server must not be running).
    A damaged archive or a non-empty target is refused before anything is written."""
    from yuxi.services.backup import RestoreResult

    if check:

        async def verify(c: Container) -> str:
            manifest = await c.services.restore.verify(archive, progress=_progress)
            return (
                f"archive {archive} is whole: Yuxi {manifest.yuxi_version}, "
                f"{len(manifest.users)} users, {len(manifest.files)} members"
            )

        typer.echo(_with_container(verify))
        return

    async def run(c: Container) -> RestoreResult:
        return await c.services.restore.restore(archive, force=force, progress=_progress)

    done = _with_container(run)
    typer.echo(
        f"restored {archive}: {done.users} users, {done.files} workspace files, "
        f"{sum(done.tables.values())} rows, {done.seconds:.1f} s"
    )
