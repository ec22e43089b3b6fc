"""``python -m yuxi.cli``: the same command line as ``yuxi``."""

from yuxi.cli import app

app()
