"""Byte budgets of the history tools: pure functions over strings and dicts, no I/O.

Every size here is the number of UTF-8 bytes that a value occupies **inside the compact JSON the
tool returns** (``compact_json``): a string is measured with its JSON escapes (``"`` and ``\\``
cost 2 bytes, a newline 2, other control characters 6) but without its surrounding quotes. For
ordinary text this equals its UTF-8 length, so the budgets read exactly like ``truncate_utf8``'s;
text full of quotes or newlines is cut earlier, so that the serialized response still fits.

Every cut is on a code point boundary (never U+FFFD) and is marked with
:data:`~yuxi.utils.string_utils.TRUNCATION_MARKER`; a snippet cut on its left side starts with
:data:`SNIPPET_LEFT_MARKER`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from yuxi.limits import SEARCH_SNIPPET_BYTES, TOOL_ITEM_BYTES
from yuxi.utils.json_utils import compact_json
from yuxi.utils.string_utils import TRUNCATION_MARKER, truncate_utf8, utf8_len

SNIPPET_LEFT_MARKER = "[truncated]…"
_LEFT_MARKER_BYTES = utf8_len(SNIPPET_LEFT_MARKER)
_RIGHT_MARKER_BYTES = utf8_len(TRUNCATION_MARKER)

#: Characters that ``json.dumps`` writes as a two-byte escape (``\\"``, ``\\\\``, ``\\n``, ...).
_SHORT_ESCAPES = frozenset('"\\\b\f\n\r\t')


def json_bytes(obj: Any) -> int:
    """UTF-8 size of ``compact_json(obj)``."""
    return utf8_len(compact_json(obj))


def json_text_bytes(value: str) -> int:
    """UTF-8 size of ``value`` as written inside a JSON string literal (quotes excluded)."""
    return json_bytes(value) - 2


def _char_cost(ch: str) -> int:
    """UTF-8 bytes of one code point inside a compact JSON string literal."""
    if ch in _SHORT_ESCAPES:
        return 2
    code = ord(ch)
    if code < 0x20:
        return 6  # \u00XX
    if code < 0x80:
        return 1
    if code < 0x800:
        return 2
    if code < 0x10000:
        return 3
    return 4


def fit_json_text(value: str, max_bytes: int) -> tuple[str, bool]:
    """Cut ``value`` so that ``json_text_bytes(result) <= max_bytes``; ``(text, truncated)``.

    Text without JSON escapes is cut by :func:`truncate_utf8` itself. Text whose escapes make it
    larger in JSON is cut at the longest prefix whose escaped size, plus the marker, fits —
    still on a code point boundary. Nothing fits, not even the marker → ``("", True)``.
    """
    if json_text_bytes(value) <= max_bytes:
        return value, False
    text, _ = truncate_utf8(value, max(max_bytes, 0))
    if json_text_bytes(text) <= max_bytes:
        return text, True
    room = max_bytes - _RIGHT_MARKER_BYTES
    if room < 0:
        return "", True
    return value[: _fitting(value, room)] + TRUNCATION_MARKER, True


def _fitting(chars: Iterable[str], room: int) -> int:
    """How many of ``chars``, taken in order, fit in ``room`` bytes of JSON string."""
    used = 0
    keep = 0
    for ch in chars:
        cost = _char_cost(ch)
        if used + cost > room:
            break
        used += cost
        keep += 1
    return keep


def fit_json_text_tail(value: str, max_bytes: int) -> tuple[str, bool]:
    """Like :func:`fit_json_text`, keeping the *end* of ``value``: the longest suffix whose
    escaped size, after :data:`SNIPPET_LEFT_MARKER`, fits in ``max_bytes``."""
    if json_text_bytes(value) <= max_bytes:
        return value, False
    room = max_bytes - _LEFT_MARKER_BYTES
    if room < 0:
        return "", True
    return SNIPPET_LEFT_MARKER + value[len(value) - _fitting(reversed(value), room) :], True


# -- search snippets ---------------------------------------------------------------------------


def locate_match(window: str, query: str, hint: int | None) -> int:
    """Best-effort index in ``window`` of the first case-insensitive match of ``query``.

    ``hint`` is where the database (``strpos(lower(content), lower(query))``) put it. Lower-casing
    can change a string's length (``"İ".lower()`` has two code points), so each guess is checked
    and the fallback is the start of the window.
    """
    folded = query.lower()
    hinted = hint if hint is not None and 0 <= hint <= len(window) else None
    if hinted is not None and window[hinted : hinted + len(query)].lower() == folded:
        return hinted
    lowered = window.lower()
    if len(lowered) == len(window):
        index = lowered.find(folded)
        if index >= 0:
            return index
    return hinted if hinted is not None else 0


def build_snippet(
    window: str,
    match_start: int,
    match_len: int,
    *,
    has_before: bool,
    has_after: bool,
    max_bytes: int = SEARCH_SNIPPET_BYTES,
) -> tuple[str, bool]:
    """A ``max_bytes`` excerpt of ``window`` centred (by bytes) on ``[match_start, +match_len)``.

    ``has_before`` / ``has_after`` say whether the message has text outside ``window``. A cut
    side is marked (``SNIPPET_LEFT_MARKER`` on the left, ``TRUNCATION_MARKER`` on the right);
    returns ``(snippet, truncated)``. A match too long for the budget keeps its beginning.
    """
    costs = [_char_cost(ch) for ch in window]
    n = len(costs)
    if not has_before and not has_after and sum(costs) <= max_bytes:
        return window, False

    def size(lo: int, hi: int, body: int) -> int:
        left = _LEFT_MARKER_BYTES if lo > 0 or has_before else 0
        right = _RIGHT_MARKER_BYTES if hi < n or has_after else 0
        return body + left + right

    lo = min(max(match_start, 0), n)
    hi = min(lo + max(match_len, 0), n)
    body = sum(costs[lo:hi])
    if size(lo, hi, body) > max_bytes:
        # The match itself does not fit: keep as much of its beginning as fits.
        hi, body = lo, 0
        while hi < n and size(lo, hi + 1, body + costs[hi]) <= max_bytes:
            body += costs[hi]
            hi += 1
    grown_left = grown_right = 0
    while True:
        can_left = lo > 0 and size(lo - 1, hi, body + costs[lo - 1]) <= max_bytes
        can_right = hi < n and size(lo, hi + 1, body + costs[hi]) <= max_bytes
        if can_left and (grown_left <= grown_right or not can_right):
            lo -= 1
            body += costs[lo]
            grown_left += costs[lo]
        elif can_right:
            body += costs[hi]
            grown_right += costs[hi]
            hi += 1
        else:
            break
    cut_left = lo > 0 or has_before
    cut_right = hi < n or has_after
    text = (
        (SNIPPET_LEFT_MARKER if cut_left else "")
        + window[lo:hi]
        + (TRUNCATION_MARKER if cut_right else "")
    )
    if json_text_bytes(text) > max_bytes:  # only when not even the markers fit
        return fit_json_text(text, max_bytes)[0], True
    return text, cut_left or cut_right


# -- read: messages and tool calls -----------------------------------------------------------


def drop_order(count: int, anchor: int | None) -> list[int]:
    """Indices of a chronological window in the order they are given up under byte pressure.

    With an anchor: farthest from it first (the older one first on a tie), never the anchor.
    Without: oldest first, never the newest.
    """
    if count == 0:
        return []
    if anchor is None:
        return list(range(count - 1))
    others = [i for i in range(count) if i != anchor]
    return sorted(others, key=lambda i: (-abs(i - anchor), i))


def water_level(lengths: Sequence[int], available: int) -> int:
    """Largest cap ``c >= 0`` with ``sum(min(n, c) for n in lengths) <= available``."""
    if available <= 0:
        return 0
    remaining = available
    ordered = sorted(lengths)
    for i, length in enumerate(ordered):
        left = len(ordered) - i
        if length * left > remaining:
            return remaining // left
        remaining -= length
    return ordered[-1] if ordered else available


TOOL_TEXT_FIELDS = ("tool_call_id", "name", "input", "output", "status", "error")


def fit_tool_call(item: dict[str, Any], max_bytes: int = TOOL_ITEM_BYTES) -> dict[str, Any]:
    """Shrink one tool-call item until ``json_bytes(item) <= max_bytes``, largest fields first.

    The text fields share the room left after the fixed parts by water-filling: fields below the
    common cap keep their full text, the larger ones are cut to it. A cut item gets
    ``"truncated": true`` (counted in its size).
    """
    if json_bytes(item) <= max_bytes:
        return item
    texts = {f: item[f] for f in TOOL_TEXT_FIELDS if isinstance(item.get(f), str)}
    lengths = {f: json_text_bytes(v) for f, v in texts.items()}
    skeleton = {**item, **dict.fromkeys(texts, ""), "truncated": True}
    available = max_bytes - json_bytes(skeleton)
    while True:
        cap = water_level(list(lengths.values()), available)
        fitted = dict(skeleton)
        for f, value in texts.items():
            fitted[f] = fit_json_text(value, cap)[0] if lengths[f] > cap else value
        over = json_bytes(fitted) - max_bytes
        if over <= 0 or available <= 0:
            return fitted
        available -= over
