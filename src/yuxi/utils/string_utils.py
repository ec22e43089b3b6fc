"""UTF-8 byte budgets for text.

Every size limit in Yuxi (memory prompt, history snippets, tool outputs) is counted in UTF-8 bytes,
not in characters. :func:`truncate_utf8` is the one place that cuts text to such a budget.

Guarantees of :func:`truncate_utf8`:

* the UTF-8 encoding of the returned text is never longer than ``max_bytes``;
* text that already fits is returned unchanged, with ``truncated=False``;
* text that does not fit is cut on a code point boundary — never inside a multi-byte sequence, so
  no U+FFFD replacement character is ever introduced — and :data:`TRUNCATION_MARKER` is appended;
  the result is then exactly ``value[:k] + TRUNCATION_MARKER`` for the largest ``k`` that fits;
* when even the marker alone does not fit, the result is ``("", True)``;
* input that cannot be encoded as UTF-8 (a lone surrogate) is refused with :class:`ValueError`
  rather than silently repaired; callers validate user text with :func:`is_valid_text` first.

The cut is per code point, not per grapheme cluster: a base letter may be kept while a combining
mark that follows it is cut. The result is still valid Unicode text.

The work is linear in the input: the text is encoded once, the cut point found by stepping back
over at most three UTF-8 continuation bytes, and the prefix decoded once.
"""

from __future__ import annotations

__all__ = [
    "TRUNCATION_MARKER",
    "is_valid_text",
    "truncate_utf8",
    "utf8_len",
]

TRUNCATION_MARKER = "…[truncated]"
"""Appended to text that :func:`truncate_utf8` had to cut."""

_MARKER_BYTES = TRUNCATION_MARKER.encode("utf-8")
_CONTINUATION_MASK = 0b1100_0000
_CONTINUATION_BITS = 0b1000_0000


def _encode_strict(value: str) -> bytes:
    """Encode ``value`` as UTF-8, turning a lone surrogate into a clear :class:`ValueError`."""
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"text is not valid Unicode: lone surrogate {value[exc.start]!r} at index {exc.start}"
        ) from exc


def utf8_len(value: str) -> int:
    """Number of bytes in the UTF-8 encoding of ``value``.

    Raises :class:`ValueError` if ``value`` contains a lone surrogate.
    """
    return len(_encode_strict(value))


def is_valid_text(value: str) -> bool:
    """True when ``value`` is storable text: encodable as UTF-8 (no lone surrogate) and no NUL."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _boundary_at_or_before(encoded: bytes, index: int) -> int:
    """Largest code point boundary ``<= index`` in well-formed UTF-8 ``encoded``."""
    while index > 0 and index < len(encoded):
        if encoded[index] & _CONTINUATION_MASK != _CONTINUATION_BITS:
            break
        index -= 1
    return index


def truncate_utf8(value: str, max_bytes: int) -> tuple[str, bool]:
    """Cut ``value`` so that its UTF-8 encoding fits in ``max_bytes``; return ``(text, truncated)``.

    See the module docstring for the exact guarantees. Raises :class:`ValueError` when
    ``max_bytes`` is negative or ``value`` contains a lone surrogate.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
        raise TypeError(f"max_bytes must be an int, not {type(max_bytes).__name__}")
    if max_bytes < 0:
        raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
    encoded = _encode_strict(value)
    if len(encoded) <= max_bytes:
        return value, False
    budget = max_bytes - len(_MARKER_BYTES)
    if budget < 0:
        return "", True
    # len(encoded) > max_bytes >= budget, so encoded[budget] exists and tells us whether the cut
    # would fall inside a multi-byte sequence.
    cut = _boundary_at_or_before(encoded, budget)
    return encoded[:cut].decode("utf-8") + TRUNCATION_MARKER, True
