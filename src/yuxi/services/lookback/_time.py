"""The time filters a model may pass to the history tools (``after``, ``before``), checked
before any I/O: ISO 8601 dates or datetimes, turned into aware UTC instants.

A date is its midnight UTC; a datetime without an offset is UTC. Anything else — another type,
another ISO form (week or ordinal dates, the basic format), an impossible date, a time that
leaves the calendar once moved to UTC, more than ``SEARCH_FILTER_MAX_CHARS`` characters — is
:class:`~yuxi.errors.InvalidArgument`, whose message names the accepted forms so the model can
try again.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

from yuxi.errors import InvalidArgument
from yuxi.limits import SEARCH_FILTER_MAX_CHARS

__all__ = ["TIME_FORMS", "parse_time"]

TIME_FORMS = (
    "an ISO 8601 date (2026-03-01, meaning its midnight UTC) or datetime "
    "(2026-03-01T09:30:00Z, 2026-03-01T17:30+08:00; without an offset: UTC)"
)

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_DATETIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}"
    r"(?::[0-9]{2}(?:\.[0-9]{1,6})?)?"
    r"(?:[Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)?"
)


def parse_time(name: str, value: object) -> datetime | None:
    """``None`` (``None`` or a blank string: no filter), or the aware UTC instant ``value``
    names; ``name`` is the argument's name in the refusal."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgument(f"{name} must be {TIME_FORMS}")
    text = value.strip()
    if not text:
        return None
    if len(text) <= SEARCH_FILTER_MAX_CHARS:
        try:
            if _DATE.fullmatch(text):
                day = date.fromisoformat(text)
                return datetime(day.year, day.month, day.day, tzinfo=UTC)
            if _DATETIME.fullmatch(text):
                moment = datetime.fromisoformat(text.replace("t", "T").replace("z", "Z"))
                if moment.tzinfo is None:
                    return moment.replace(tzinfo=UTC)
                return moment.astimezone(UTC)
        except (ValueError, OverflowError):
            pass
    raise InvalidArgument(f"{name} must be {TIME_FORMS}")
