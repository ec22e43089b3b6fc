"""B7's own term splitter (the "terms" BM25 baseline and the corpus checks; not the product's).

Text is folded with NFKC and lower-cased, then split into runs of letters/digits. A run of CJK
ideographs (Han, kana, Hangul) becomes its overlapping character bigrams (a run of one character
stays one term); any other run is one word.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["is_cjk", "terms"]

_RUN = re.compile(r"[^\W_]+")
_CJK_RANGES = (
    (0x3040, 0x30FF),  # kana
    (0x3400, 0x4DBF),  # Han extension A
    (0x4E00, 0x9FFF),  # Han
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # Han compatibility
    (0x20000, 0x2FA1F),  # Han extensions B..
)


def is_cjk(ch: str) -> bool:
    code = ord(ch)
    return any(low <= code <= high for low, high in _CJK_RANGES)


def _split_run(run: str) -> list[str]:
    """A letters/digits run: words and CJK stretches apart, CJK stretches as bigrams."""
    out: list[str] = []
    start = 0
    while start < len(run):
        cjk = is_cjk(run[start])
        end = start + 1
        while end < len(run) and is_cjk(run[end]) == cjk:
            end += 1
        part = run[start:end]
        if not cjk or len(part) == 1:
            out.append(part)
        else:
            out.extend(part[i : i + 2] for i in range(len(part) - 1))
        start = end
    return out


def terms(text: str) -> list[str]:
    """``"My sister Lena"`` → ``["my", "sister", "lena"]``; ``"我女儿"`` → ``["我女", "女儿"]``."""
    folded = unicodedata.normalize("NFKC", text).lower()
    out: list[str] = []
    for run in _RUN.findall(folded):
        out.extend(_split_run(run))
    return out
