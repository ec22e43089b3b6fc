"""Unicode folding for rules that must see through lookalikes and invisible characters.

A rule written against ASCII (a secret's prefix, a phrase aimed at the agent, a tag name) is
easy to dodge with a full-width letter or an invisible character: ``ｓｋ-…``, ``ignore\u200b all
previous…``. Such rules match the *folded* text instead: NFKC (compatibility forms become their
plain letters) with every invisible character removed — every format character (category Cf)
and every default-ignorable code point (Unicode's ``Default_Ignorable_Code_Point``: soft
hyphen, zero-width characters, bidi controls, variation selectors, Hangul fillers, tags).
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "DEFAULT_IGNORABLE_RANGES",
    "FORMAT_RANGES",
    "INVISIBLE",
    "fold_compat",
    "is_invisible",
]

#: General category Cf (format) in Unicode 14, the version of Python 3.11's ``unicodedata``.
FORMAT_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x13438),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)
#: ``Default_Ignorable_Code_Point`` of DerivedCoreProperties.txt (Unicode 14). Most of it is also
#: Cf; the rest (combining grapheme joiner, variation selectors, fillers, reserved ranges) is not.
DEFAULT_IGNORABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
#: One character class for both tables (tests/unit/agents/test_memory_framing.py checks it
#: against ``unicodedata`` over every code point, so a newer Unicode cannot slip by).
INVISIBLE = re.compile(
    "["
    + "".join(
        f"\\U{low:08x}-\\U{high:08x}" for low, high in (*FORMAT_RANGES, *DEFAULT_IGNORABLE_RANGES)
    )
    + "]"
)


def is_invisible(ch: str) -> bool:
    """True for a format character (Cf) or a default-ignorable code point."""
    return INVISIBLE.match(ch) is not None


def fold_compat(text: str) -> str:
    """NFKC of ``text`` without invisible characters (removed before and after NFKC, since
    NFKC can map a visible character to an ignorable one, e.g. U+3164 to U+1160)."""
    if text.isascii():
        return text
    return INVISIBLE.sub("", unicodedata.normalize("NFKC", INVISIBLE.sub("", text)))
