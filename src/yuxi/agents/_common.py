"""Small pure helpers shared by the agent modules: compact JSON results, UTF-8 cuts."""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "compact_json",
    "cut_to_char_boundary",
    "error_result",
]


def compact_json(result: dict[str, Any]) -> str:
    """The one serialisation of every tool result: compact, UTF-8 kept readable."""
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


def error_result(code: str, message: str) -> str:
    return compact_json({"status": "error", "code": code, "error": message})


def cut_to_char_boundary(data: bytes) -> bytes:
    """Drop a trailing partial UTF-8 sequence left by a byte-budget cut (never adds U+FFFD)."""
    end = len(data)
    start = end - 1
    # Step back over at most three continuation bytes to the lead byte of the last sequence.
    while start >= 0 and end - start <= 3 and data[start] & 0xC0 == 0x80:
        start -= 1
    if start < 0:
        return data
    lead = data[start]
    if lead < 0x80:
        need = 1
    elif lead >> 5 == 0b110:
        need = 2
    elif lead >> 4 == 0b1110:
        need = 3
    else:
        need = 4
    return data if end - start >= need else data[:start]
