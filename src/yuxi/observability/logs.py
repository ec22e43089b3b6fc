"""Log lines: plain text (the default) or JSON lines (``YUXI_LOG_FORMAT=json``).

A run's log lines carry its ``run_id`` and ``thread_id``: the executor calls :func:`bind_run` at
the start of a run's task, the value lives in a :class:`~contextvars.ContextVar` (so it follows
the run's task and the tasks it starts, and no other), and :class:`RunContextFilter` copies it
onto every record a handler emits.

In JSON, every line goes through ``redact`` first (the message and any traceback): the entry
point passes the access log's credential redaction, so the JSON path hides exactly what the
text access log hides. What is logged never includes a token or memory text to begin with: the
code logs ids and error codes, and SQL parameters are left out of database errors
(``hide_parameters`` on the engine).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Final, Literal

__all__ = [
    "LOG_FORMATS",
    "JsonFormatter",
    "LogFormat",
    "RunContextFilter",
    "bind_run",
    "configure_logging",
    "current_run",
]

LOG_FORMATS: Final = ("text", "json")
LogFormat = Literal["text", "json"]

_RUN: ContextVar[tuple[str, str] | None] = ContextVar("yuxi_run", default=None)


def bind_run(run_id: str, thread_id: str) -> None:
    """From now on, in the current task (and the tasks it starts), log records carry this run.

    The executor runs each run in a task of its own, so the binding ends with the task."""
    _RUN.set((run_id, thread_id))


def current_run() -> tuple[str, str] | None:
    """``(run_id, thread_id)`` bound in this context, if any."""
    return _RUN.get()


class RunContextFilter(logging.Filter):
    """Adds ``run_id`` and ``thread_id`` (``None`` outside a run) to every record; drops none.
    Installed on the handler, so records propagated from any logger get them."""

    def filter(self, record: logging.LogRecord) -> bool:
        run = _RUN.get()
        record.run_id, record.thread_id = run if run is not None else (None, None)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``ts`` (UTC, ISO 8601), ``level``, ``logger``, ``message``,
    ``run_id`` and ``thread_id`` when the record belongs to a run, ``exception`` when it has a
    traceback. ``redact`` is applied to the message and the traceback."""

    def __init__(self, redact: Callable[[str], str] | None = None) -> None:
        super().__init__()
        self._redact = redact or (lambda text: text)

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": self._redact(record.getMessage()),
        }
        for key in ("run_id", "thread_id"):
            value = getattr(record, key, None)
            if value is not None:
                line[key] = value
        if record.exc_info:
            line["exception"] = self._redact(self.formatException(record.exc_info))
        return json.dumps(line, ensure_ascii=False, default=str)


def configure_logging(
    log_format: str, *, redact: Callable[[str], str] | None = None, level: int = logging.INFO
) -> bool:
    """For ``json``: one stderr handler on the root logger (replacing any), JSON lines with the
    run context, at ``level``; every logger (uvicorn's and Python warnings included) propagates
    to it. For ``text``
    nothing changes. True when JSON logging is on (uvicorn must then not configure its own)."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {LOG_FORMATS}, got {log_format!r}")
    if log_format == "text":
        return False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(redact))
    handler.addFilter(RunContextFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    logging.captureWarnings(True)  # a library's warning becomes a JSON line too
    return True
