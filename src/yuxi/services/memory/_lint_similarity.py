"""The repetition rules of the memory lint: ``duplicate`` and ``near_duplicate`` (pure, no I/O).

Two keys per entry:

* the *duplicate key*: the text without its list marker, NFKC-folded without invisible
  characters, case-folded, every run of whitespace one space. Equal keys → ``duplicate``.
* the *similarity key*: the duplicate key's letters, digits and marks only (punctuation, symbols
  and spaces dropped), compared as characters — so Chinese, which has no spaces between words,
  is compared like any other script.

``near_duplicate`` is the multiset Jaccard similarity of the similarity keys' character bigrams
(with a start and an end token, so one-character keys have bigrams too) of at least
:data:`NEAR_DUPLICATE_JACCARD`. Why 4/5: a fact restated with other punctuation or spacing scores
1; one changed character in a fact of n characters scores (n - 1) / (n + 3), so a typo fix or a
stale copy of a fact of 17+ characters is caught; two facts that differ by a word — another city,
another name, "son" for "daughter" — score well below (e.g. "likes cats" / "likes bats" 0.67,
"lives in Hangzhou" / "lives in Hangzhou, China" 0.68).

Candidate pairs come from prefix filtering (Bayardo et al., "Scaling up all pairs similarity
search"): with the bigrams of every key ordered by a global order (rarest first), two keys whose
similarity reaches the threshold share a bigram within the first ``|x| - ceil(t·|x|) + 1`` of
each. Only such pairs, of compatible sizes, are scored: a 128 KiB file of short entries stays
far from the quadratic number of comparisons, and the result is exactly that of comparing all.
"""

from __future__ import annotations

import heapq
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Sequence
from fractions import Fraction
from itertools import repeat

from yuxi.limits import MEMORY_LINT_COMPARISONS_MAX
from yuxi.services.memory._entries import strip_list_marker
from yuxi.utils.unicode_fold import fold_compat

__all__ = [
    "NEAR_DUPLICATE_JACCARD",
    "bigrams",
    "duplicate_key",
    "near_duplicates",
    "similarity_key",
]

NEAR_DUPLICATE_JACCARD = Fraction(4, 5)
_NUM = NEAR_DUPLICATE_JACCARD.numerator
_DEN = NEAR_DUPLICATE_JACCARD.denominator

_SPACE = re.compile(r"\s+")
_START, _END = "\x00", "\x01"  # never in a similarity key (letters, digits and marks only)


def duplicate_key(text: str) -> str:
    folded = fold_compat(strip_list_marker(text.strip())).casefold()
    return _SPACE.sub(" ", folded).strip()


def similarity_key(key: str) -> str:
    return "".join(ch for ch in key if unicodedata.category(ch)[0] in "LNM")


def bigrams(key: str) -> frozenset[str]:
    """The multiset of ``key``'s bigrams as a set: a repeated bigram gets its occurrence number
    (``"ab"``, ``"ab1"``, ``"ab2"``; a plain bigram has two characters, so none collide)."""
    padded = _START + key + _END
    pairs = list(map(str.__add__, padded[:-1], padded[1:]))
    unique = frozenset(pairs)
    if len(unique) == len(pairs):
        return unique
    seen: Counter[str] = Counter()
    tokens = []
    for pair in pairs:
        count = seen[pair]
        seen[pair] = count + 1
        tokens.append(f"{pair}{count}" if count else pair)
    return frozenset(tokens)


def _prefix_length(size: int) -> int:
    return size - (_NUM * size + _DEN - 1) // _DEN + 1


def _needed_overlap(a: int, b: int) -> int:
    """The least number of shared bigrams for a Jaccard of ``t``: o / (a + b - o) ≥ t."""
    return (_NUM * (a + b) + _NUM + _DEN - 1) // (_NUM + _DEN)


def near_duplicates(
    keys: Sequence[str], *, budget: int = MEMORY_LINT_COMPARISONS_MAX
) -> dict[int, int]:
    """For each position whose key is similar to an earlier one's: the first such earlier
    position. ``keys`` are similarity keys; empty keys match nothing.

    At most ``budget`` candidate pairs are looked at, in file order; once it is spent, later
    positions are not checked (a bound on the work for a hostile file, never reached by a file
    of ordinary facts).
    """
    bags = [bigrams(key) if key else frozenset[str]() for key in keys]
    frequency = Counter(token for bag in bags for token in bag)
    # token → (position, rank of the token in that position's order), in file order
    index: defaultdict[str, list[tuple[int, int]]] = defaultdict(list)
    found: dict[int, int] = {}
    for later, bag in enumerate(bags):
        if not bag:
            continue
        size = len(bag)
        prefix = sorted(bag, key=lambda token: (frequency[token], token))[: _prefix_length(size)]
        previous = -1
        # Each list is in file order, so the merge meets the candidates earliest first, each
        # first through the first bigram the pair shares (the lowest rank in both orders).
        streams = (zip(index[token], repeat(rank)) for rank, token in enumerate(prefix))
        for (earlier, their_rank), our_rank in heapq.merge(*streams):
            if earlier == previous:
                continue
            previous = earlier
            budget -= 1
            if budget < 0:
                return found
            other = len(bags[earlier])
            # Positional filter: bigrams ranked before the first shared one are not shared.
            most = 1 + min(size - our_rank - 1, other - their_rank - 1)
            if most >= _needed_overlap(size, other) and _similar(bag, bags[earlier]):
                found[later] = earlier
                break
        for rank, token in enumerate(prefix):
            index[token].append((later, rank))
    return found


def _similar(a: frozenset[str], b: frozenset[str]) -> bool:
    small, large = sorted((len(a), len(b)))
    if _DEN * small < _NUM * large:  # Jaccard ≤ small / large: cannot reach the bar
        return False
    shared = len(a & b)
    return _DEN * shared >= _NUM * (len(a) + len(b) - shared)
