"""History lookback: the model's three bounded tools over the user's own past threads.

Public surface: :class:`LookbackService` (what the tools call) and :class:`LookbackResult`; and,
for tests and benchmarks that check the budgets on their own rows, the pure shaping functions
the time-argument parser and the byte measure every budget is checked in.
"""

from yuxi.services.lookback._budget import json_bytes, json_text_bytes
from yuxi.services.lookback._shape import (
    first_line,
    fit_read,
    fit_search,
    iso_utc,
    message_item,
    read_response,
    search_item,
    search_response,
    thread_item,
    threads_response,
    tool_call_items,
)
from yuxi.services.lookback._time import parse_time
from yuxi.services.lookback.service import LookbackResult, LookbackService

__all__ = [
    "LookbackResult",
    "LookbackService",
    "first_line",
    "fit_read",
    "fit_search",
    "iso_utc",
    "json_bytes",
    "json_text_bytes",
    "message_item",
    "parse_time",
    "read_response",
    "search_item",
    "search_response",
    "thread_item",
    "threads_response",
    "tool_call_items",
]
