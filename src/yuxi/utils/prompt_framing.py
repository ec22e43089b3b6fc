"""Framing low-trust text inside a prompt: unforgeable markers, neutralised tag-like text.

Two rules, one for each way text could pass itself off as part of the prompt's structure:

* **The boundary is unforgeable.** A block of data in the prompt (the user's memory) sits between
  an opening and a closing marker that carry a *nonce*, a random value drawn once per run
  (:func:`new_nonce`, 128 bits). The data was written before the run began and cannot know it,
  and the prompt tells the model that only the closing marker with this nonce ends the data.
* **Tag-like text in the data is neutralised.** Text that a reader could take for a tag of the
  prompt — ``<`` (or a character that looks like it), optional spaces or slashes, then a name
  that matters (:data:`RESERVED_TAG_NAMES`: the memory frame, chat-template roles, tool-call
  markup; or ``<|`` of a special token) — gets that first character written as ``&lt;``.
  Matching happens on a folded copy: each character decomposed by NFKD, format characters,
  default-ignorable code points, combining marks and other invisible or unassigned characters
  dropped, lookalikes of ``<`` and ``/`` that NFKD leaves alone (``‹ 〈 《 ⟨ ⁄ ∕``…) mapped to them,
  case folded. Each folded character remembers the original character it came from, so the
  escape lands on the original text, which is otherwise left exactly as it was: ``a < b``,
  ``<b>bold</b>`` or ``《书名》`` are not touched.

After :func:`neutralize_markup`, :func:`find_markup` finds nothing in the text, nor in any part
of it (a cut keeps the property, which the history budgets rely on), and neutralising again
changes nothing. The same rule frames the history tools' output
(:mod:`yuxi.repositories.lookback._shape`), whose text fields sit inside JSON strings.
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache

from yuxi.utils.unicode_fold import INVISIBLE

__all__ = [
    "LT_ESCAPE",
    "RESERVED_TAG_NAMES",
    "Neutralized",
    "close_marker",
    "find_markup",
    "fold_for_markup",
    "neutralize_markup",
    "neutralize_with_positions",
    "new_nonce",
    "open_marker",
]

#: What a neutralised ``<`` (or lookalike) becomes.
LT_ESCAPE = "&lt;"

#: Names whose tags matter: the memory frame, chat-template roles and tokens, tool-call markup.
#: A name matches as a prefix (``tool_call`` also covers ``tool_calls``), with any spacing,
#: ``_``, ``-`` or ``.`` where it has ``_``. ``user`` is left out on purpose: ``<user>@<host>``
#: is ordinary text, and no frame of Yuxi is called so.
RESERVED_TAG_NAMES = (
    "memory_data",
    "system",
    "assistant",
    "developer",
    "instruction",
    "tool_call",
    "tool_result",
    "tool_response",
    "tool_use",
    "function_call",
    "function_result",
    "function_response",
    "im_start",
    "im_end",
    "endoftext",
)

_NONCE_BYTES = 16


def new_nonce() -> str:
    """A fresh random nonce for one run's markers (32 lowercase hex digits)."""
    return secrets.token_hex(_NONCE_BYTES)


def open_marker(name: str, nonce: str) -> str:
    return f'<{name} nonce="{nonce}">'


def close_marker(name: str, nonce: str) -> str:
    return f'</{name} nonce="{nonce}">'


# -- folding -----------------------------------------------------------------------------------

#: Characters that read as ``<`` or ``/`` but that NFKD does not fold to them (the ones it does
#: fold, such as ``＜ ﹤ ／ ≮``, need no entry). ``>`` needs no table: a tag is found by its start.
_LOOKALIKES = {
    **dict.fromkeys(
        "\u02c2\u1438\u2039\u22d6\u276c\u276e\u2770\u27e8\u27ea\u2991\u2993\u2995\u29fc"
        "\u3008\u300a",  # ˂ ᐸ ‹ ⋖ ❬ ❮ ❰ ⟨ ⟪ ⦑ ⦓ ⦕ ⧼ 〈 《
        "<",
    ),
    **dict.fromkeys(
        "\u2044\u2215\u2571\u27cb\u29f8\u2afd\u2f03\u3033",  # ⁄ ∕ ╱ ⟋ ⧸ ⫽ ⼃ 〳
        "/",
    ),
}
#: Every character whose fold holds a ``<``: the lookalikes, and the characters whose NFKD does
#: (``<``, ``≮``, ``〈`` U+2329, the vertical ``︽ ︿``, the small and full-width forms). A text
#: without any of them holds no tag. The unit tests check this set over every code point.
_LT_CHARS = frozenset(
    [ch for ch, to in _LOOKALIKES.items() if to == "<"]
    + ["<", "\u226e", "\u2329", "\ufe3d", "\ufe3f", "\ufe64", "\uff1c"]
)
#: Dropped by the fold besides :data:`~yuxi.utils.unicode_fold.INVISIBLE`: combining marks,
#: unassigned, private-use and surrogate code points, and control characters (whitespace kept).
_DROPPED_CATEGORIES = frozenset({"Mn", "Me", "Cn", "Co", "Cs", "Cc", "Cf"})


@lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    if INVISIBLE.match(ch):
        return ""
    if ch in _LOOKALIKES:
        return _LOOKALIKES[ch]
    out = []
    for part in unicodedata.normalize("NFKD", ch):
        if part.isspace():
            out.append(" ")
        elif unicodedata.category(part) in _DROPPED_CATEGORIES or INVISIBLE.match(part):
            continue
        else:
            out.append(_LOOKALIKES.get(part, part).casefold())
    return "".join(out)


def fold_for_markup(text: str) -> tuple[str, list[int]]:
    """The folded copy of ``text`` and, for each folded character, its original index."""
    folded: list[str] = []
    origins: list[int] = []
    for index, ch in enumerate(text):
        part = _fold_char(ch)
        folded.append(part)
        origins.extend([index] * len(part))
    return "".join(folded), origins


def _name_pattern(name: str) -> str:
    return r"[\s_\-.]*".join(re.escape(word) for word in name.split("_"))


_TAG_START = re.compile(
    r"<[\s/\\]*(?:\||" + "|".join(_name_pattern(name) for name in RESERVED_TAG_NAMES) + ")"
)
_LT_LIKE = re.compile("[" + "".join(sorted(_LT_CHARS)) + "]")


def find_markup(text: str) -> list[int]:
    """Original indices of the characters that start a tag-like span, ascending."""
    if not _LT_LIKE.search(text):
        return []
    folded, origins = fold_for_markup(text)
    return [origins[match.start()] for match in _TAG_START.finditer(folded)]


# -- neutralising ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Neutralized:
    """Neutralised text and the original indices that were escaped."""

    text: str
    escaped: tuple[int, ...]

    def position(self, original: int) -> int:
        """Where original index ``original`` (or the end, ``len``) is in :attr:`text`."""
        return original + (len(LT_ESCAPE) - 1) * bisect_left(self.escaped, original)


def neutralize_with_positions(text: str) -> Neutralized:
    starts = find_markup(text)
    if not starts:
        return Neutralized(text, ())
    pieces: list[str] = []
    last = 0
    for start in starts:
        pieces.append(text[last:start])
        pieces.append(LT_ESCAPE)
        last = start + 1
    pieces.append(text[last:])
    return Neutralized("".join(pieces), tuple(starts))


def neutralize_markup(text: str) -> str:
    """``text`` with every tag-like start written as :data:`LT_ESCAPE` (see the module doc)."""
    return neutralize_with_positions(text).text
