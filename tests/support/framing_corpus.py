"""The generated corpus of tag lookalikes (issue 10 §1) and an independent checker for it.

Built from ``unicodedata`` over every code point: every format character (Cf), every
default-ignorable code point, every character whose NFKC form is or contains ``<``, ``/`` or
``>``, and lookalikes NFKC leaves alone (listed here, independently of the product's table).
:func:`forged_tags` counts what a lenient reader would take for a memory_data tag, folding the
text its own way, so that tests of the framing do not check the product with itself.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import cache

from yuxi.utils.unicode_fold import DEFAULT_IGNORABLE_RANGES

ALL = range(sys.maxunicode + 1)


@cache
def _categories() -> dict[str, list[str]]:
    """Every code point, grouped the way the corpus needs them (computed once)."""
    groups: dict[str, list[str]] = {"Cf": [], "<": [], "/": [], ">": []}
    for code in ALL:
        ch = chr(code)
        if unicodedata.category(ch) == "Cf":
            groups["Cf"].append(ch)
        nfkc = unicodedata.normalize("NFKC", ch)
        for target in "</>":
            if target in nfkc:
                groups[target].append(ch)
    return groups


def cf_chars() -> list[str]:
    return _categories()["Cf"]


def default_ignorable() -> list[str]:
    return [chr(c) for low, high in DEFAULT_IGNORABLE_RANGES for c in range(low, high + 1)]


def nfkc_equivalents(target: str) -> list[str]:
    return _categories()[target]


#: Lookalikes that NFKC leaves alone, written here independently of the module's own table.
LT_LOOKALIKES = "‹〈《⟨⟪❮❬❰⧼⦑⦓⋖˂ᐸ\u2329\ufe3d\ufe3f\u226e"
SLASH_LOOKALIKES = "⁄∕⧸╱⟋⫽"
GT_LOOKALIKES = "›〉》⟩⟫❯❭❱⧽⦒⦔⋗˃ᐳ"


#: Every default-ignorable code point (the product's table; checked against Unicode's property
#: in tests/unit/agents/test_memory_framing.py).
DEFAULT_IGNORABLE = {chr(c) for low, high in DEFAULT_IGNORABLE_RANGES for c in range(low, high + 1)}
_ORACLE_TAG = re.compile(r"<[\s/\\]*memory[\s_\-.]*data")


def forged_tags(text: str) -> int:
    """How many memory_data tags a lenient reader would see in ``text``: drop every invisible,
    combining, control or unassigned character, NFKD, turn every lookalike into ``<``/``/``,
    case-fold, and count ``<`` + slashes/spaces + the name."""
    kept = "".join(
        ch
        for ch in unicodedata.normalize("NFKD", text)
        if ch not in DEFAULT_IGNORABLE
        and (ch.isspace() or unicodedata.category(ch) not in {"Cf", "Mn", "Me", "Cc", "Cn", "Co"})
    )
    kept = kept.translate(
        {ord(c): "<" for c in LT_LOOKALIKES} | {ord(c): "/" for c in SLASH_LOOKALIKES}
    )
    folded = unicodedata.normalize("NFKD", kept).casefold()
    return len(_ORACLE_TAG.findall(folded))


def insertions(base: str, chars: list[str]) -> list[str]:
    return [base[:p] + ch + base[p:] for ch in chars for p in range(len(base) + 1)]


def substitutions(base: str, extra: list[str]) -> list[str]:
    """``base`` with its ``<``, ``/``, ``>`` replaced by every lookalike, with an extra
    character (``""`` or an invisible one) after the ``<``."""
    lts = [*nfkc_equivalents("<"), *LT_LOOKALIKES]
    slashes = ["", *nfkc_equivalents("/"), *SLASH_LOOKALIKES] if "/" in base else [""]
    gts = [*nfkc_equivalents(">"), *GT_LOOKALIKES]
    name = base.strip("</>")
    out: list[str] = []
    for lt in lts:
        for slash in slashes:
            for gap in extra:
                out.append(f"{lt}{gap}{slash}{name}{gts[len(out) % len(gts)]}")
    return out
