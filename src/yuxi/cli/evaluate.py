"""``yuxi eval``: evaluation runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer

from yuxi.bootstrap import Container
from yuxi.cli._app import _typer, _with_container, app

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
