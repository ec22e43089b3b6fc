"""The SQL of ``search_thread_messages``: BM25 over the caller's visible messages.

A message's terms are ``message_search.terms`` (kept by 0008's triggers; the one definition of
a term is ``yuxi_terms``, migration 0012: stemmed Latin words, CJK bigrams and characters); a
query's terms come from the same rule (:func:`._query.terms_statement`). The score is Lucene's
BM25, the variant ``bm25s`` calls ``lucene``::

    idf(t)     = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(d)   = Σ_t idf(t) · tf(t, d) / (tf(t, d) + K1 · (1 - B + B · |d| / avgdl))

where N, avgdl and df are taken over the *corpus*: every visible message of the caller (the
searching run's own messages left out), or, when the caller's history is large and a query
term is common in it, the visible ones among its newest ``SEARCH_WINDOW_MESSAGES`` within the
filters together with every holder of a rarer term (see :mod:`yuxi.limits`). Filters
(``after``, ``before``, one thread) and quoted phrases choose which of the corpus may be
*returned*; they do not change the statistics of the full corpus.

Visibility is never a Python filter: every statement carries the rule of
:mod:`~yuxi.repositories.lookback.visibility` (the visible threads as a CTE), so ``LIMIT``
only ever counts rows the caller may see. Statements are built once per shape
(``functools.cache``) with bind parameters; every term is a parameter.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import (
    ARRAY,
    CTE,
    ColumnElement,
    DateTime,
    Float,
    Select,
    Text,
    and_,
    bindparam,
    cast,
    exists,
    false,
    func,
    literal,
    or_,
    select,
)

from yuxi.db.models import Conversation, Message, MessageSearch
from yuxi.repositories.lookback import _params as p
from yuxi.repositories.lookback._params import Statement
from yuxi.repositories.lookback._query import LIKE_ESCAPE, escape_like
from yuxi.repositories.lookback.visibility import (
    not_of_run,
    own_run_chain,
    visible_conversation,
)

__all__ = [
    "K1",
    "B",
    "corpus_statement",
    "newest_rows",
    "phrase_values",
    "rank_over",
    "rank_statement",
    "returnable_filters",
    "searchable_rows",
    "term_values",
    "visible_threads",
    "with_frequencies",
]

#: BM25's term-frequency saturation and length normalisation: the usual values (Lucene's ``b``;
#: ``k1`` as ``bm25s`` defaults to, the library the benchmarks compare with).
K1 = 1.5
B = 0.75


S = MessageSearch
_TERMS = bindparam("terms", type_=ARRAY(Text()))
_AFTER = bindparam("after", type_=DateTime(timezone=True))
_BEFORE = bindparam("before", type_=DateTime(timezone=True))
_DOCS = bindparam("docs", type_=Float())
_AVGDL = bindparam("avgdl", type_=Float())


def _term(i: int) -> Any:
    return bindparam(f"t{i}", type_=Text())


# -- the visible threads and the corpus ----------------------------------------------------


def visible_threads() -> CTE:
    return (
        select(Conversation.id, Conversation.searchable_messages, Conversation.searchable_terms)
        .where(*visible_conversation(p.UID, owner_view=p.OWNER_VIEW))
        .cte("visible_threads")
        .prefix_with("MATERIALIZED")
    )


def searchable_rows(visible: CTE, own_run: bool) -> list[ColumnElement[bool]]:
    """A row of ``message_search`` the caller may find: their own, in a visible thread, not of
    the searching run (or the runs it resumes)."""
    return [
        S.uid == p.UID,
        S.conversation_id.in_(select(visible.c.id)),
        *not_of_run(p.UID, p.RUN if own_run else None, S),
    ]


def returnable_filters() -> list[ColumnElement[bool]]:
    """The filters: which corpus rows may be returned (``NULL``: no such filter)."""
    return [
        or_(_AFTER.is_(None), S.created_at >= _AFTER),
        or_(_BEFORE.is_(None), S.created_at < _BEFORE),
        or_(p.CONVERSATION.is_(None), S.conversation_id == p.CONVERSATION),
    ]


@functools.cache
def _corpus(own_run: bool) -> Select[*tuple[Any, ...]]:
    visible = visible_threads()
    threads = select(
        func.coalesce(func.sum(visible.c.searchable_messages), 0).label("docs"),
        func.coalesce(func.sum(visible.c.searchable_terms), 0).label("terms"),
    ).subquery("threads")
    if not own_run:
        return select(threads.c.docs, threads.c.terms)
    own = (
        select(
            func.count().label("docs"),
            func.coalesce(func.sum(func.cardinality(S.terms)), 0).label("terms"),
        )
        .where(
            S.run_id.in_(own_run_chain(p.UID, p.RUN)),
            S.uid == p.UID,
            S.conversation_id.in_(select(visible.c.id)),
        )
        .subquery("own")
    )
    return select(threads.c.docs - own.c.docs, threads.c.terms - own.c.terms).select_from(
        threads.join(own, literal(True))
    )


def corpus_statement(uid: str, current_run_id: str | None) -> Statement:
    """``(docs, terms)``: how many visible messages the caller has (the searching run's own left
    out) and how many terms they hold: the running totals of the visible threads."""
    return _corpus(current_run_id is not None), {"uid": uid, "run_id": current_run_id}


# -- the newest messages ------------------------------------------------------------------------


def newest_rows(
    searchable: list[ColumnElement[bool]], *, filtered: bool, frequencies: int | None = None
) -> Select[*tuple[Any, ...]]:
    """The visible ones of the caller's newest ``WINDOW`` indexed messages (within the filters
    if ``filtered``): a walk of ``(uid, created_at DESC)`` that stops there. Their ids, or with
    ``frequencies`` the columns :func:`with_frequencies` adds for that many terms.

    The walk's own ``LIMIT`` bounds what it reads, so the planner walks the index in order and
    stops, whatever the filters (without it, a date range made it read every row of the range
    through a bitmap and sort them). Visibility is applied to the rows walked."""
    inner = select(S.message_id)
    if frequencies is not None:
        inner = with_frequencies(select(S.message_id, S.created_at, S.conversation_id), frequencies)
    names = [c.name for c in inner.selected_columns]
    walk = (
        inner.add_columns(and_(*searchable).label("visible"))
        .where(S.uid == p.UID, *(returnable_filters() if filtered else ()))
        .order_by(S.created_at.desc(), S.message_id.desc())
        .limit(p.WINDOW)
        .subquery("walk")
    )
    return select(*(walk.c[name] for name in names)).where(walk.c.visible)


# -- ranking ---------------------------------------------------------------------------------


def with_frequencies(query: Select[*tuple[Any, ...]], n: int) -> Select[*tuple[Any, ...]]:
    return query.add_columns(
        func.cardinality(S.terms).label("dl"),
        *(
            func.cardinality(func.array_positions(S.terms, _term(i))).label(f"tf{i}")
            for i in range(n)
        ),
    )


def _phrase_conditions(phrases: int) -> list[ColumnElement[bool]]:
    """Each quoted phrase: its terms in the row (the index's work), then the phrase itself,
    case-insensitive, in the message (read only for those rows)."""
    conditions: list[ColumnElement[bool]] = []
    for k in range(phrases):
        terms = bindparam(f"phrase_terms{k}", type_=ARRAY(Text()))
        pattern = bindparam(f"phrase_pattern{k}", type_=Text())
        conditions.append(S.terms.contains(terms))
        conditions.append(
            exists()
            .where(Message.id == S.message_id)
            .where(Message.content.ilike(pattern, escape=LIKE_ESCAPE))
        )
    return conditions


def rank_over(
    candidates: Any, docs: ColumnElement[Any], avgdl: ColumnElement[Any], n: int, phrases: int
) -> tuple[Select[*tuple[Any, ...]], CTE, ColumnElement[Any]]:
    """BM25 over ``candidates`` (rows ``message_id, created_at, dl, tf0..``): the statistics
    (``docs``, ``avgdl``, each term's holders among the candidates), the weights, and the rows
    that hold a term and pass the filters and phrases, unordered. Returns ``(ranked, weights,
    score)``; the caller orders by ``score`` and limits."""
    tf = [candidates.c[f"tf{i}"] for i in range(n)]
    stats = select(
        cast(docs, Float).label("docs"),
        cast(avgdl, Float).label("avgdl"),
        *(cast(func.count().filter(tf[i] > 0), Float).label(f"df{i}") for i in range(n)),
    ).subquery("stats")
    weights = (
        select(
            stats.c.docs,
            (literal(K1 * B, Float) / func.greatest(stats.c.avgdl, 1e-9)).label("per_term"),
            *(
                func.ln(
                    1.0 + (stats.c.docs - stats.c[f"df{i}"] + 0.5) / (stats.c[f"df{i}"] + 0.5)
                ).label(f"idf{i}")
                for i in range(n)
            ),
        )
        .cte("weights")
        .prefix_with("MATERIALIZED")
    )
    norm = literal(K1 * (1 - B), Float) + weights.c.per_term * candidates.c.dl
    score = sum(
        (weights.c[f"idf{i}"] * cast(tf[i], Float) / (cast(tf[i], Float) + norm) for i in range(n)),
        start=literal(0.0, Float),
    ).label("score")
    ranked = select(
        candidates.c.message_id,
        candidates.c.created_at,
        score,
        weights.c.docs,
        *tf,
        *(weights.c[f"idf{i}"] for i in range(n)),
    ).select_from(candidates.join(weights, literal(True)))
    # Only rows holding a term can score; the filters and phrases pick what may be returned.
    returnable = (
        select(S.message_id)
        .where(S.message_id == candidates.c.message_id)
        .where(*returnable_filters(), *_phrase_conditions(phrases))
        .exists()
    )
    holds_a_term = or_(*(t > 0 for t in tf)) if n else false()
    return ranked.where(holds_a_term, returnable), weights, score


@functools.cache
def _rank(n: int, phrases: int, own_run: bool) -> Select[*tuple[Any, ...]]:
    visible = visible_threads()
    candidates = (
        with_frequencies(select(S.message_id, S.created_at, S.conversation_id), n)
        .where(*searchable_rows(visible, own_run), S.terms.overlap(_TERMS))
        .cte("candidates")
        .prefix_with("MATERIALIZED")
    )
    ranked, _, score = rank_over(candidates, _DOCS, _AVGDL, n, phrases)
    return ranked.order_by(score.desc(), candidates.c.message_id.desc()).limit(p.LIMIT)


def rank_statement(
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
) -> Statement:
    """The best ``limit`` matches over every visible message (the full corpus, its ``docs`` and
    ``avgdl`` from :func:`corpus_statement`): ``(message_id, created_at, score, docs, tf0..,
    idf0..)``. ``phrases``: ``(terms, phrase)`` pairs every returned row must hold. A long
    history with a common term is ranked by :func:`._sample.sampled_rank_statement` instead."""
    statement = _rank(len(terms), len(phrases), current_run_id is not None)
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
    }
    return statement, {**values, **term_values(terms), **phrase_values(phrases)}


def term_values(terms: list[str]) -> dict[str, Any]:
    return {f"t{i}": term for i, term in enumerate(terms)}


def phrase_values(phrases: list[tuple[list[str], str]]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for k, (phrase_terms, phrase) in enumerate(phrases):
        values[f"phrase_terms{k}"] = phrase_terms
        values[f"phrase_pattern{k}"] = "%" + escape_like(phrase) + "%"
    return values
