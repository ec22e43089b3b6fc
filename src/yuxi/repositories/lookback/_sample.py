"""The history search's sample of a long history: which query terms are common (the newest
messages as a sample, the other terms' holders counted up to a bound), and how many messages a
windowed corpus holds. The rules are in :mod:`yuxi.limits` (``SEARCH_*``) and design.md §6.2;
the corpus and ranking statements they decide between are in :mod:`._history_search`.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import Integer, Select, bindparam, func, select, union
from sqlalchemy.dialects.postgresql import array

from yuxi.repositories.lookback._params import Statement
from yuxi.repositories.lookback._search import (
    _RARE,
    _TERMS,
    S,
    _newest,
    _returnable,
    _searchable,
    _visible_threads,
)

__all__ = ["probe_statement", "window_counts_statement", "window_size_statement"]

_CAP = bindparam("cap", type_=Integer())


@functools.cache
def _probe(own_run: bool) -> Select[*tuple[Any, ...]]:
    visible = _visible_threads()
    terms = func.unnest(_TERMS).table_valued("term", with_ordinality="ord").render_derived()
    holders = (
        select(S.message_id)
        .where(S.terms.contains(array([terms.c.term])), *_searchable(visible, own_run))
        .limit(_CAP)
        .correlate(terms)
        .subquery("holders")
    )
    held = select(func.count()).select_from(holders).scalar_subquery()
    return select(terms.c.ord, held.label("holders")).select_from(terms).order_by(terms.c.ord)


def probe_statement(uid: str, terms: list[str], cap: int, current_run_id: str | None) -> Statement:
    """For each of ``terms`` (in order): how many visible messages hold it, counted up to
    ``cap`` (a count of ``cap`` means *at least*): at most ``cap`` rows read per term."""
    return _probe(current_run_id is not None), {
        "uid": uid,
        "terms": terms,
        "cap": cap,
        "run_id": current_run_id,
    }


@functools.cache
def _window_counts(n: int, own_run: bool) -> Select[*tuple[Any, ...]]:
    visible = _visible_threads()
    newest = _newest(_searchable(visible, own_run), filtered=False, frequencies=n).subquery()
    return select(
        func.count().label("rows"),
        *(func.count().filter(newest.c[f"tf{i}"] > 0) for i in range(n)),
    )


def window_counts_statement(
    uid: str, terms: list[str], window: int, current_run_id: str | None
) -> Statement:
    """``(rows, holders of term 0, …)`` among the caller's newest ``window`` visible messages:
    a sample that tells which terms are common in a long history without counting them all."""
    values: dict[str, Any] = {"uid": uid, "window": window, "run_id": current_run_id}
    values.update({f"t{i}": term for i, term in enumerate(terms)})
    return _window_counts(len(terms), current_run_id is not None), values


@functools.cache
def _window_size(own_run: bool) -> Select[*tuple[Any, ...]]:
    visible = _visible_threads()
    searchable = _searchable(visible, own_run)
    newest = _newest(searchable, filtered=True)
    rare = select(S.message_id).where(*searchable, *_returnable(), S.terms.overlap(_RARE))
    return select(func.count()).select_from(union(newest, rare).subquery("corpus"))


def window_size_statement(
    uid: str,
    *,
    rare_terms: list[str],
    window: int,
    current_run_id: str | None,
    after: Any,
    before: Any,
    conversation_id: int | None,
) -> Statement:
    """How many messages the windowed corpus of :func:`rank_statement` holds (for a search that
    ranked nothing: its rows carry the count otherwise)."""
    return _window_size(current_run_id is not None), {
        "uid": uid,
        "rare_terms": rare_terms,
        "window": window,
        "run_id": current_run_id,
        "after": after,
        "before": before,
        "conversation_id": conversation_id,
    }
