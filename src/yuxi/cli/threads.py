"""``yuxi threads purge``: the trash's purge job, run by hand (design.md §12.3)."""

from __future__ import annotations

import typer

from yuxi.bootstrap import Container
from yuxi.cli._app import _typer, _with_container, app

threads_app = _typer("Threads: the trash of deleted threads.")
app.add_typer(threads_app, name="threads")


@threads_app.command("purge")
def threads_purge() -> None:
    """Purge every deleted thread whose YUXI_TRASH_DAYS are over, as the worker pool's purge
    job does: the threads with their SubAgent threads, messages, search rows, tool calls, runs,
    events and checkpoints. Prints what it removed; a thread whose run is still live waits."""
    from yuxi.services.chat import PurgeReport

    async def purge(c: Container) -> tuple[PurgeReport, int]:
        return await c.services.chat.trash.purge_due(), c.services.chat.trash.days

    report, days = _with_container(purge, migrate=True)
    if report.threads:
        rows = ", ".join(f"{table} {n}" for table, n in report.rows.items() if n)
        typer.echo(f"purged {len(report.threads)} thread(s): {' '.join(report.threads)}")
        typer.echo(f"rows: {rows}; memory versions unlinked {report.versions_unlinked}")
    else:
        typer.echo(f"nothing to purge (threads stay in the trash {days} day(s))")
    if report.waiting:
        typer.echo(
            f"{report.waiting} thread(s) wait for a run that is still live; "
            "they are purged once it has stopped",
            err=True,
        )
