"""The one JSON serialisation of tool results, events and history responses.

Compact (no spaces) and with UTF-8 kept readable (``ensure_ascii=False``): history byte budgets
are computed on exactly this text, so every writer must use it.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["compact_json", "jsonable"]


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def jsonable(value: Any) -> Any:
    """``value`` if JSON can hold it, else a copy with every unknown object as its ``str``."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))
