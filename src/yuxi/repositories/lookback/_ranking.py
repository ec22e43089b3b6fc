"""What a ranked search takes and gives: :class:`SearchRequest` (its arguments, validated once
by the service), :class:`SearchHit` / :class:`SearchHits` (the rows, unshaped: the service turns
them into the budgeted response), and which term a hit's snippet centres on
(:func:`best_term`). The statements are in :mod:`._query`, :mod:`._sample` and
:mod:`._search`; the rules they follow in design.md §6.2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["Neighbour", "SearchHit", "SearchHits", "SearchRequest", "best_term"]


@dataclass(frozen=True)
class SearchRequest:
    """One search, its arguments checked once, by the service (design.md §6.2): ``query``
    stripped, 1..``SEARCH_QUERY_MAX_CHARS`` characters of valid text; ``limit`` in
    1..``SEARCH_MAX_ITEMS``; ``after`` / ``before`` aware, ``after < before``; ``thread_id`` a
    stripped id of valid text. ``current_run_id``: the searching run, whose own messages (and
    those of the runs it resumes) are left out. ``owner_view``: the owner's own search, which
    also sees the threads the owner hid from recall (never the model's)."""

    uid: str
    query: str
    limit: int
    after: datetime | None = None
    before: datetime | None = None
    thread_id: str | None = None
    current_run_id: str | None = None
    owner_view: bool = False


@dataclass(frozen=True)
class Neighbour:
    """The visible message just before or after a hit in its thread: its id, role and the part of
    its text nearest the hit (the end of the one before, the start of the one after), at most
    ``SEARCH_CONTEXT_READ_CHARS`` characters read."""

    message_id: int
    role: str
    content: str
    more: bool  # the message holds more than was read


@dataclass(frozen=True)
class SearchHit:
    """One ranked message: its shown columns (``thread_id``, ``title``, ``message_id``,
    ``role``, ``created_at``, ``content``), its BM25 score, the text its snippet centres on
    (the first phrase, else the hit's weightiest term), and its neighbours in the thread."""

    row: Any
    score: float
    match: str
    before: Neighbour | None = None
    after: Neighbour | None = None


@dataclass(frozen=True)
class SearchHits:
    """The hits best first; ``searched_messages`` is ``None`` when every visible message was
    ranked, else the size of the windowed corpus; ``left_out_terms``: terms past the limit."""

    hits: list[SearchHit]
    searched_messages: int | None = None
    left_out_terms: list[str] = field(default_factory=list)


def best_term(row: Any, terms: list[str]) -> str:
    """The term a ranked row holds that weighs most (its snippet is cut around it)."""
    values = row._mapping
    held = [(float(values[f"idf{i}"]), -i) for i in range(len(terms)) if values[f"tf{i}"]]
    return terms[-max(held)[1]] if held else terms[0]
