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

from yuxi.errors import InvalidArgument

__all__ = [
    "TRUNCATION_MARKER",
    "check_text",
    "cut_to_char_boundary",
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


def cut_to_char_boundary(data: bytes) -> bytes:
    """Drop a trailing partial UTF-8 sequence left by a byte-budget read (never adds U+FFFD).

    ``data`` is a prefix of well-formed UTF-8 (a file read up to a budget). The result is the
    longest prefix of ``data`` that ends on a code point boundary.
    """
    end = len(data)
    if end == 0 or data[end - 1] < 0x80:
        return data
    start = _boundary_at_or_before(data, end - 1)
    lead = data[start]
    need = (
        2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else 4 if lead >> 3 == 0b11110 else 1
    )
    return data if end - start >= need else data[:start]


def check_text(
    name: str,
    value: object,
    *,
    max_bytes: int | None = None,
    max_chars: int | None = None,
    strip: bool = False,
) -> str:
    """Validate a text argument from a model or a user; the one validator of every such value.

    Refused with :class:`~yuxi.errors.InvalidArgument` (naming ``name``): not a string, a lone
    surrogate, a NUL character, blank, more than ``max_bytes`` UTF-8 bytes or more than
    ``max_chars`` characters. Limits apply to the returned value, which is ``value`` itself,
    or ``value.strip()`` with ``strip``.
    """
    if not isinstance(value, str):
        raise InvalidArgument(f"{name} must be a string")
    if strip:
        value = value.strip()
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidArgument(f"{name} is not valid Unicode (lone surrogate)") from None
    if "\x00" in value:
        raise InvalidArgument(f"{name} must not contain NUL characters")
    if not value.strip():
        raise InvalidArgument(f"{name} must not be blank")
    if max_bytes is not None and size > max_bytes:
        raise InvalidArgument(f"{name} is {size} UTF-8 bytes; the limit is {max_bytes}")
    if max_chars is not None and len(value) > max_chars:
        raise InvalidArgument(f"{name} must be 1..{max_chars} characters")
    return value


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
