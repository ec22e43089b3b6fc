"""``list_threads`` arguments, checked before any I/O.

:meth:`LookbackService.list_threads <yuxi.services.lookback_service.LookbackService.list_threads>`
owns the call (switch, transaction, metrics). ``before`` is read by the one time-filter parser of
the history tools (:mod:`._lookback_time`), so every tool accepts the same dates and datetimes.
"""

from __future__ import annotations

from datetime import datetime

from yuxi.limits import LIST_THREADS_DEFAULT_ITEMS, LIST_THREADS_MAX_ITEMS
from yuxi.services._lookback_time import parse_time

__all__ = ["DEFAULT_ITEMS", "MAX_ITEMS", "parse_before"]

MAX_ITEMS = LIST_THREADS_MAX_ITEMS
DEFAULT_ITEMS = LIST_THREADS_DEFAULT_ITEMS


def parse_before(value: object) -> datetime | None:
    """``None`` (``None`` or blank: no filter), or the aware UTC instant ``value`` names (a
    date: its midnight UTC; a datetime without an offset: UTC); else ``InvalidArgument``."""
    return parse_time("before", value)
