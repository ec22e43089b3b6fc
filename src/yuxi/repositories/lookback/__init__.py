"""The model's lookback into the caller's own ordinary past threads (design.md §6).

Public surface: :class:`LookbackRepository` and what its methods return, BM25's two
parameters, and (for plan tests and benchmarks) :mod:`.statements`. Everything else in this
package is private to it.
"""

from yuxi.repositories.lookback._ranking import Neighbour, SearchHit, SearchHits, SearchRequest
from yuxi.repositories.lookback._search import K1, B
from yuxi.repositories.lookback._threads import FIRST_LINE_CHARS, LEADING_BLANKS
from yuxi.repositories.lookback.repository import LookbackRepository, ThreadRead

__all__ = [
    "FIRST_LINE_CHARS",
    "K1",
    "LEADING_BLANKS",
    "B",
    "LookbackRepository",
    "Neighbour",
    "SearchHit",
    "SearchHits",
    "SearchRequest",
    "ThreadRead",
]
