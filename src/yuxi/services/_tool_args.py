"""Interim helpers shared by the memory and lookback services' tool-facing coroutines."""

from __future__ import annotations

from typing import Any


def tool_error(code: str, message: str) -> dict[str, Any]:
    return {"status": "error", "code": code, "error": message}


def int_arg(value: object, name: str, low: int, high: int) -> int | dict[str, Any]:
    # bool is an int subclass; "true" is not a limit.
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 19:
            value = int(value.strip())
        else:
            return tool_error("invalid_argument", f"{name} must be an integer {low}..{high}")
    if not low <= value <= high:
        return tool_error("invalid_argument", f"{name} must be between {low} and {high}")
    return value
