"""``search_thread_messages`` on one session: the query's phrases and terms, the thread
filter, the corpus and whether a term is common, the ranking, and the shown rows. The statements
are in :mod:`._query`, :mod:`._sample` and :mod:`._search`; the rules they follow in design.md
§6.2. The rows go back unshaped: the service turns them into the budgeted tool response.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from yuxi import limits
from yuxi.errors import InvalidArgument, NotFound
from yuxi.limits import (
    SEARCH_MAX_ITEMS,
    SEARCH_MAX_PHRASES,
    SEARCH_MAX_TERMS,
    SEARCH_QUERY_MAX_CHARS,
)
from yuxi.repositories.lookback import _params as p
from yuxi.repositories.lookback import _query as query_sql
from yuxi.repositories.lookback import _sample as sample
from yuxi.repositories.lookback import _search as search
from yuxi.repositories.visibility import NOT_VISIBLE
from yuxi.utils.string_utils import is_valid_text

__all__ = ["SearchHit", "SearchHits", "search_messages"]


@dataclass(frozen=True)
class SearchHit:
    """One ranked message: its shown columns (``thread_id``, ``title``, ``message_id``,
    ``role``, ``created_at``, ``content``), its BM25 score and the text its snippet centres on
    (the first phrase, else the hit's weightiest term)."""

    row: Any
    score: float
    match: str


@dataclass(frozen=True)
class SearchHits:
    """The hits best first; ``searched_messages`` is ``None`` when every visible message was
    ranked, else the size of the windowed corpus; ``left_out_terms``: terms past the limit."""

    hits: list[SearchHit]
    searched_messages: int | None = None
    left_out_terms: list[str] = field(default_factory=list)


async def search_messages(
    session: AsyncSession,
    uid: str,
    query: str,
    limit: int,
    *,
    current_run_id: str | None = None,
    after: datetime | None = None,
    before: datetime | None = None,
    thread_id: str | None = None,
) -> SearchHits:
    """The caller's visible messages (none of ``current_run_id``'s chain) that hold a term
    of ``query``, best first by BM25 (ties: newest first); see :mod:`._history_search`.

    ``query`` was validated by the caller (stripped, 1..256 characters). Quoted phrases
    must each appear in a returned message (case-insensitive); their terms and the other
    words rank. ``after`` (inclusive) / ``before`` (exclusive) bound the message's time;
    ``thread_id`` keeps one visible thread (else ``NotFound``). Bad input is
    ``InvalidArgument``. The ToolCall table is never touched.
    """
    if not query or len(query) > SEARCH_QUERY_MAX_CHARS or not is_valid_text(query):
        raise InvalidArgument(f"query must be 1..{SEARCH_QUERY_MAX_CHARS} characters of text")
    limit = min(max(limit, 1), SEARCH_MAX_ITEMS)
    free_text, phrases = query_sql.split_phrases(query)
    if len(phrases) > SEARCH_MAX_PHRASES:
        raise InvalidArgument(f"at most {SEARCH_MAX_PHRASES} quoted phrases")
    await session.execute(p.PLAN_WITH_PARAMETERS)
    rows = (await session.execute(*query_sql.terms_statement([free_text, *phrases]))).all()
    free_terms, *phrase_terms = [list(row[1] or ()) for row in rows]
    if any(not terms for terms in phrase_terms):
        raise InvalidArgument("a quoted phrase must hold a letter or digit")
    terms = list(dict.fromkeys([t for ts in phrase_terms for t in ts] + free_terms))
    if not terms:
        raise InvalidArgument("the query must hold a word: letters or digits")
    used, left_out = terms[:SEARCH_MAX_TERMS], terms[SEARCH_MAX_TERMS:]
    conversation_id: int | None = None
    if thread_id is not None:
        found = await session.execute(*query_sql.thread_filter_statement(uid, thread_id))
        conversation_id = found.scalar_one_or_none()
        if conversation_id is None:
            raise NotFound(NOT_VISIBLE)
    run = current_run_id
    docs, total = (await session.execute(*search.corpus_statement(uid, run))).one()
    docs, total = int(docs), int(total)
    common: list[bool] = [False] * len(used)
    # The three regime limits are read at each call (one definition, which a test may lower).
    if docs > limits.SEARCH_FULL_CORPUS_MESSAGES:
        common = await _common_terms(session, uid, used, docs, run)
    windowed = any(common)
    rare = [t for t, c in zip(used, common, strict=True) if not c]
    statement = search.rank_statement(
        uid,
        used,
        phrases=list(zip(phrase_terms, phrases, strict=True)),
        limit=limit,
        current_run_id=run,
        after=after,
        before=before,
        conversation_id=conversation_id,
        docs=docs,
        avgdl=total / docs if docs else 1.0,
        rare_terms=rare,
        window=limits.SEARCH_WINDOW_MESSAGES if windowed else None,
    )
    ranked = (await session.execute(*statement)).all()
    shown = await session.execute(
        *query_sql.details_statement(uid, [int(r.message_id) for r in ranked])
    )
    details = {int(row.message_id): row for row in shown}
    hits: list[SearchHit] = []
    for row in ranked:
        detail = details.get(int(row.message_id))
        if detail is None:  # hidden between the two statements: never shown
            continue
        match = phrases[0] if phrases else _best_term(row, used)
        hits.append(SearchHit(detail, float(row.score), match))
    searched: int | None = None
    if windowed and ranked:
        searched = int(ranked[0].docs)
    elif windowed:
        size = sample.window_size_statement(
            uid,
            rare_terms=rare,
            window=limits.SEARCH_WINDOW_MESSAGES,
            current_run_id=run,
            after=after,
            before=before,
            conversation_id=conversation_id,
        )
        searched = int((await session.execute(*size)).scalar_one())
    return SearchHits(hits, searched_messages=searched, left_out_terms=left_out)


async def _common_terms(
    session: AsyncSession, uid: str, terms: list[str], docs: int, run: str | None
) -> list[bool]:
    """Which of ``terms`` more than ``SEARCH_TERM_HOLDERS / len(terms)`` of the caller's
    ``docs`` visible messages hold. The newest ``SEARCH_WINDOW_MESSAGES`` (their visible ones)
    are a sample: a
    term their share puts above the bound is common without counting; every other term's
    holders are counted, up to the bound plus one."""
    cap = limits.SEARCH_TERM_HOLDERS // len(terms)
    window = limits.SEARCH_WINDOW_MESSAGES
    counts = (await session.execute(*sample.window_counts_statement(uid, terms, window, run))).one()
    rows = max(int(counts[0]), 1)
    common = [int(held) * docs / rows > cap for held in counts[1:]]
    unsure = [t for t, c in zip(terms, common, strict=True) if not c]
    if unsure:
        probe = await session.execute(*sample.probe_statement(uid, unsure, cap + 1, run))
        counted = dict(zip(unsure, (int(row.holders) > cap for row in probe), strict=True))
        common = [c or counted[t] for t, c in zip(terms, common, strict=True)]
    return common


def _best_term(row: Any, terms: list[str]) -> str:
    """The term a ranked row holds that weighs most (its snippet is cut around it)."""
    values = row._mapping
    held = [(float(values[f"idf{i}"]), -i) for i in range(len(terms)) if values[f"tf{i}"]]
    return terms[-max(held)[1]] if held else terms[0]
