"""The README's CLI table names every ``yuxi`` command (and nothing that does not exist)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer.main

from yuxi.cli import app

README = Path(__file__).resolve().parents[2] / "README.md"


def _commands() -> set[str]:
    root: Any = typer.main.get_command(app)
    found: set[str] = set()
    for name, command in root.commands.items():
        subcommands = getattr(command, "commands", None)
        if subcommands:
            found |= {f"{name} {sub}" for sub in subcommands}
        else:
            found.add(name)
    return found


def _documented() -> set[str]:
    """Each CLI table row's first cell: ``yuxi a b`` (options dropped), and the ``/ `x```
    shorthand for sibling subcommands (``yuxi db upgrade`` / ``status``)."""
    text = README.read_text("utf-8")
    table = text.split("### CLI", 1)[1].split("\n\n", 2)[1]
    found: set[str] = set()
    for row in table.splitlines()[2:]:
        cell = row.split("|")[1]
        words = re.findall(r"`yuxi ([a-z][a-z-]*(?: [a-z][a-z-]*)?)", cell)
        assert words, row
        found.add(words[0])
        group = words[0].split()[0]
        found |= {f"{group} {sibling}" for sibling in re.findall(r"/ `([a-z][a-z-]*)`", cell)}
    return found


def test_the_readme_cli_table_lists_exactly_the_commands() -> None:
    assert _documented() == _commands()


def _options_of(path: str) -> set[str]:
    command: Any = typer.main.get_command(app)
    for word in path.split():
        command = command.commands[word]
    return {opt for param in command.params for opt in param.opts if opt.startswith("--")}


def test_every_option_in_the_readme_cli_table_exists() -> None:
    """``yuxi run [--host H] [--port P]``: each ``--option`` of a row's first cell is one the
    command really takes (a renamed or dropped option fails here)."""
    text = README.read_text("utf-8")
    table = text.split("### CLI", 1)[1].split("\n\n", 2)[1]
    checked = 0
    for row in table.splitlines()[2:]:
        cell = row.split("|")[1]
        command = re.findall(r"`yuxi ([a-z][a-z-]*(?: [a-z][a-z-]*)?)", cell)[0]
        if command == "bench":  # its FLAGS belong to python -m benchmarks
            continue
        command = command if command in _commands() else command.split()[0]
        documented = set(re.findall(r"(--[a-z][a-z-]*)", cell))
        assert documented <= _options_of(command), (row, documented)
        checked += len(documented)
    assert checked >= 6  # run and serve --host/--port, worker --count, tokens options
