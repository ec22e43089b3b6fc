"""``pg_notify`` inside the caller's transaction: delivered when it commits, never on rollback.

A notification carries an id only (see :mod:`yuxi.db.notifications`); the listener's
subscribers re-read the row it names.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Select, func, literal, select


def notify_value(channel: str, payload: Any) -> ColumnElement[Any]:
    """``pg_notify(channel, payload)`` as an expression; ``payload`` is a column or a string.
    In a ``RETURNING`` clause it fires only for a row actually written."""
    value = literal(payload) if isinstance(payload, str) else payload
    return func.pg_notify(channel, value)


def notify(channel: str, payload: str) -> Select[Any]:
    """``SELECT pg_notify(channel, payload)``."""
    return select(notify_value(channel, payload))
