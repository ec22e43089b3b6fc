"""The ranked search of a long history, in one statement: which query terms are common, the
windowed corpus they call for, and BM25 over it (design.md §6.2; the rules are in
:mod:`yuxi.limits`, ``SEARCH_*``).

For a caller with more than ``SEARCH_FULL_CORPUS_MESSAGES`` visible messages, a term held by
more than ``SEARCH_TERM_HOLDERS // terms`` of them is *common*. The statement decides it and
ranks in one go, reading each part once:

1. **the sample**: the visible ones among the caller's newest ``SEARCH_WINDOW_MESSAGES`` (one
   walk of ``(uid, created_at DESC)``), with each term's frequency in each row. A term whose
   share there, scaled to the whole history, is above the bound is common without counting;
2. **the probe**, for each other term only (a one-time filter: a common term's holders are
   never read): its visible holders through the term index, at most the bound plus one. More
   than the bound: common. Otherwise the probe has read *every* holder, and those rows are the
   term's part of the corpus as they are — not read again;
3. **the corpus**: with a common term, the newest visible messages within the filters (the
   sample itself when there are no filters, else a second walk within them) and every holder of
   a rare term within the filters, its statistics its own; with none, every holder of a term,
   ranked with the full corpus's ``docs`` and ``avgdl`` (:func:`._search.corpus_statement`);
4. BM25 over it (:func:`._search.rank_over`).

One statement, so that the newest messages are walked and a rare term's holders read once, not
once to decide and again to rank. It always returns at least one row, so the size of a windowed
corpus is known even when nothing ranks (``message_id`` is then ``NULL``).
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import (
    Float,
    Integer,
    Select,
    bindparam,
    case,
    cast,
    exists,
    func,
    literal,
    not_,
    nulls_last,
    select,
    true,
    union,
)
from sqlalchemy.dialects.postgresql import array

from yuxi.repositories.lookback import _params as p
from yuxi.repositories.lookback._params import Statement
from yuxi.repositories.lookback._search import (
    _AVGDL,
    _DOCS,
    _TERMS,
    S,
    newest_rows,
    phrase_values,
    rank_over,
    returnable_filters,
    searchable_rows,
    term_values,
    visible_threads,
    with_frequencies,
)

__all__ = ["sampled_rank_statement"]

_CAP = bindparam("cap", type_=Integer())


@functools.cache
def _sampled_rank(n: int, phrases: int, filtered: bool, own_run: bool) -> Select[*tuple[Any, ...]]:
    visible = visible_threads()
    # One set of conditions for every part: the run chain is one CTE of the statement.
    searchable = searchable_rows(visible, own_run)
    row_columns = (S.message_id, S.created_at, S.conversation_id)
    sample = (
        newest_rows(searchable, filtered=False, frequencies=n)
        .cte("sample")
        .prefix_with("MATERIALIZED")
    )
    newest = sample
    if filtered:
        newest = (
            newest_rows(searchable, filtered=True, frequencies=n)
            .cte("newest")
            .prefix_with("MATERIALIZED")
        )
    counts = (
        select(
            func.count().label("rows"),
            array([func.count().filter(sample.c[f"tf{i}"] > 0) for i in range(n)]).label("held"),
        )
        .select_from(sample)
        .cte("counts")
        .prefix_with("MATERIALIZED")
    )
    terms = func.unnest(_TERMS).table_valued("term", with_ordinality="ord").render_derived()
    # A term's share of the sample, scaled to the whole history, above the bound: common
    # (float arithmetic, as the bound was always compared).
    common_in_sample = (
        cast(counts.c.held[cast(terms.c.ord, Integer)], Float)
        * _DOCS
        / cast(func.greatest(counts.c.rows, 1), Float)
        > _CAP
    )
    # Without filters a rare term's holders are its part of the corpus: the probe reads them
    # with their frequencies, once. With filters only those within them are, and the probe
    # only counts (as a filter may leave a handful of a rare term's thousand holders).
    probed_rows = select(S.message_id) if filtered else with_frequencies(select(*row_columns), n)
    holders = (
        probed_rows.where(
            S.terms.contains(array([terms.c.term])), *searchable, not_(common_in_sample)
        )
        .limit(_CAP + 1)
        .lateral("holders")
    )
    probe = (
        select(terms.c.ord, *holders.c)
        .select_from(counts.join(terms, true()).join(holders, true()))
        .cte("probe")
        .prefix_with("MATERIALIZED")
    )
    probed = select(func.count()).where(probe.c.ord == terms.c.ord).scalar_subquery()
    verdict = (
        select(terms.c.ord, terms.c.term, (common_in_sample | (probed > _CAP)).label("common"))
        .select_from(counts.join(terms, true()))
        .cte("verdict")
        .prefix_with("MATERIALIZED")
    )
    windowed = exists().where(verdict.c.common)
    if not filtered:
        # Windowed: the newest and every holder of a rare term; otherwise every holder of a
        # term (all are rare: each probe read all of its term's).
        rare = (
            select(*(c for c in probe.c if c.name != "ord"))
            .join(verdict, verdict.c.ord == probe.c.ord)
            .where(not_(verdict.c.common))
        )
        parts = [select(*newest.c).where(windowed), rare]
    else:
        # Windowed: the newest within the filters and each rare term's holders within them;
        # otherwise every holder of a term (the filters pick what is returned, as in full
        # ranking).
        within = (
            with_frequencies(select(*row_columns), n)
            .where(
                S.terms.contains(array([verdict.c.term])),
                *searchable,
                *returnable_filters(),
                not_(verdict.c.common),
                windowed,
            )
            .lateral("within")
        )
        every = with_frequencies(select(*row_columns), n).where(
            *searchable, S.terms.overlap(_TERMS), not_(windowed)
        )
        parts = [
            select(*newest.c).where(windowed),
            select(*within.c).select_from(verdict.join(within, true())),
            every,
        ]
    corpus = union(*parts).cte("corpus").prefix_with("MATERIALIZED")
    docs = case((windowed, cast(func.count(), Float)), else_=_DOCS)
    avgdl = case(
        (windowed, func.coalesce(cast(func.avg(corpus.c.dl), Float), literal(1.0, Float))),
        else_=_AVGDL,
    )
    ranked, weights, score = rank_over(corpus, docs, avgdl, n, phrases)
    hits = ranked.order_by(score.desc(), corpus.c.message_id.desc()).limit(p.LIMIT).lateral("hits")
    return (
        select(
            *(c for c in hits.c if c.name != "docs"),
            weights.c.docs,
            windowed.label("windowed"),
        )
        .select_from(weights.outerjoin(hits, true()))
        .order_by(nulls_last(hits.c.score.desc()), hits.c.message_id.desc())
    )


def sampled_rank_statement(
    uid: str,
    terms: list[str],
    *,
    phrases: list[tuple[list[str], str]],
    limit: int,
    current_run_id: str | None,
    after: Any,
    before: Any,
    conversation_id: int | None,
    docs: int,
    avgdl: float,
    cap: int,
    window: int,
) -> Statement:
    """The best ``limit`` matches of a long history (``docs`` visible messages, ``avgdl`` terms
    each on average): rows ``(message_id, created_at, score, tf0.., idf0.., docs, windowed)``,
    or one row with ``message_id`` ``NULL`` when none ranks. ``windowed``: a term was common
    and the windowed corpus (``docs`` messages) was ranked; otherwise every holder of a term,
    with the full corpus's statistics. ``cap``: the bound on a term's holders; ``window``: the
    newest messages sampled."""
    filtered = after is not None or before is not None or conversation_id is not None
    statement = _sampled_rank(len(terms), len(phrases), filtered, current_run_id is not None)
    values: dict[str, Any] = {
        "uid": uid,
        "terms": terms,
        "limit": limit,
        "run_id": current_run_id,
        "after": after,
        "before": before,
        "conversation_id": conversation_id,
        "docs": docs,
        "avgdl": avgdl,
        "cap": cap,
        "window": window,
    }
    return statement, {**values, **term_values(terms), **phrase_values(phrases)}
