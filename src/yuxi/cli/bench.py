"""``yuxi bench``: the benchmark suite."""

from __future__ import annotations

from pathlib import Path

import typer

from yuxi.cli._app import app


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
