"""The SQL of ``search_thread_messages``: visibility, field allowlist, literal ILIKE (the reads
of one thread are in :mod:`._history_reads`; the shared bind parameters in
:mod:`._history_params`).

Visibility is never a Python filter: every statement here carries the whole rule of
:mod:`~yuxi.repositories._history_visibility` in its WHERE clause, so ``LIMIT`` only ever
counts rows the caller may see.

Statements select explicit columns only (never an ORM entity), so metadata, image_content,
attachments and run_id are never even read (run_id only filters). Long text is cut in SQL to
what a budget can use.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from sqlalchemy import (
    Select,
    Text,
    TextClause,
    func,
    literal_column,
    select,
    text,
)
from sqlalchemy.orm import aliased

from yuxi.db.models import Conversation, Message
from yuxi.limits import (
    SEARCH_SNIPPET_BYTES,
    SEARCH_TRIGRAM_MIN_CHARS,
)

from . import _history_params as p
from ._history_params import Statement
from ._history_visibility import (
    not_of_run,
    visible_conversation,
    visible_message,
)

__all__ = [
    "LIKE_ESCAPE",
    "PLAN_WITH_PARAMETERS",
    "escape_like",
    "has_older_statement",
    "index_key",
    "recent_count_statement",
    "search_statement",
]

LIKE_ESCAPE = "\\"

#: Run first in every history tool's transaction. psycopg prepares a statement after 5 runs and
#: PostgreSQL may then keep a *generic* plan, made without the parameters: for the search (one
#: user's rows, a LIKE pattern) that plan scans all of the user's messages, 1,230x slower at p95
#: than the plan made for the actual user and pattern (benchmarks/, B4, 1M rows). Only for the
#: history statements: the rest of the app keeps generic plans, which spare the write path's
#: statements ~0.5-1 ms of planning each (B1).
PLAN_WITH_PARAMETERS: TextClause = text("SET LOCAL plan_cache_mode = force_custom_plan")


def escape_like(value: str) -> str:
    """``value`` as a literal for ``LIKE … ESCAPE '\\'``: the escape itself first, then % and _."""
    return (
        value.replace(LIKE_ESCAPE, LIKE_ESCAPE * 2)
        .replace("%", LIKE_ESCAPE + "%")
        .replace("_", LIKE_ESCAPE + "_")
    )


def _visible_messages(uid: Any, *columns: Any, m: Any = Message) -> Select[Any]:
    return (
        select(*columns)
        .join(Conversation, Conversation.id == m.conversation_id)
        .where(*visible_message(uid, m), *visible_conversation(uid))
    )


def _newest(uid: Any, window: Any) -> Any:
    """The newest ``window`` stored messages of ``uid``, visible or not, as an alias of
    ``Message``: a backward walk of ``(uid, id DESC)`` that stops after ``window`` rows and
    carries every column the search needs, so no plan can turn it into a scan of the whole
    history (visibility is applied to these rows afterwards)."""
    columns = (
        Message.id,
        Message.uid,
        Message.conversation_id,
        Message.role,
        Message.message_type,
        Message.content,
        Message.run_id,
    )
    newest = (
        select(*columns)
        .where(Message.uid == uid)
        .order_by(Message.id.desc())
        .limit(window)
        .subquery("newest")
    )
    return aliased(Message, newest)


@functools.cache
def _recent_count(own_run: bool) -> Select[*tuple[Any, ...]]:
    m = _newest(p.UID, p.WINDOW)
    visible = (
        select(m.id)
        .join(Conversation, Conversation.id == m.conversation_id)
        .where(*visible_message(p.UID, m), *visible_conversation(p.UID))
        .where(*not_of_run(p.UID, p.RUN if own_run else None, m))
    )
    return select(
        select(func.count()).select_from(_newest(p.UID, p.WINDOW_AND_ONE)).scalar_subquery(),
        select(func.count()).select_from(visible.subquery()).scalar_subquery(),
    )


def recent_count_statement(uid: str, window: int, current_run_id: str | None) -> Statement:
    """``(stored, visible)``: how many of the newest ``window + 1`` stored messages of ``uid``
    there are (at most ``window``: that is the whole history), and how many of the newest
    ``window`` the search may see."""
    return _recent_count(current_run_id is not None), {
        "uid": uid,
        "window": window,
        "window_and_one": window + 1,
        "run_id": current_run_id,
    }


@functools.cache
def _has_older() -> Select[*tuple[Any, ...]]:
    older = (
        select(Message.id)
        .where(Message.uid == p.UID)
        .order_by(Message.id.desc())
        .offset(p.WINDOW)
        .limit(1)
    )
    return select(older.exists())


def has_older_statement(uid: str, window: int) -> Statement:
    """Whether ``uid`` has more than ``window`` stored messages: a walk of ``(uid, id DESC)``
    that reads only the index where the visibility map allows (what a keyed search needs to
    know after its first pass; :func:`recent_count_statement` also counts the visible ones)."""
    return _has_older(), {"uid": uid, "window": window}


def _pattern(query: str) -> str:
    return "%" + escape_like(query) + "%"


def _recent_hits(own_run: bool) -> Any:
    m = _newest(p.UID, p.WINDOW)
    return (
        _visible_messages(p.UID, m.id.label("message_id"), m=m)
        .where(*not_of_run(p.UID, p.RUN if own_run else None, m))
        .where(m.content.ilike(p.PATTERN, escape=LIKE_ESCAPE))
        .order_by(m.id.desc())
        .limit(p.LIMIT)
        .subquery("recent_hits")
    )


#: A run of letters/digits: what pg_trgm makes trigrams of (it splits text on everything else).
_WORD_RUN = re.compile(r"[^\W_]+")


def index_key(query: str) -> str | None:
    """The longest run of 3+ letters/digits in ``query`` (the first of equals), or ``None``.

    The trigram index is searched for this run alone; the whole query is then matched on the
    candidates. A run has no word boundary inside, so pg_trgm takes no blank-padded trigrams of
    it (``"  s"``: every word starting with s): those are in a large share of all rows and
    would make the index scan's cost follow the table, not the caller. Every message containing
    the query contains the run, so the candidates hold every match.
    """
    runs = [run for run in _WORD_RUN.findall(query) if len(run) >= SEARCH_TRIGRAM_MIN_CHARS]
    return max(runs, key=len) if runs else None


def _off_index(column: Any) -> Any:
    """``column`` as an expression no index is built on (``content || ''``, the same text):
    a condition on it is checked on rows already found, never used to find them."""
    return column.op("||")(literal_column("''", Text))


def _indexed_hits(own_run: bool) -> Any:
    # All matching visible messages, found in one scan that is computed apart (MATERIALIZED, no
    # ORDER BY/LIMIT inside): the planner picks the cheapest way to find *all* of the caller's
    # candidates — the (uid, content) trigram index where it exists — and cannot walk
    # (uid, id DESC) hoping for an early LIMIT (that walk reads the whole history when the term
    # is common in the table but rare for the caller). Only the index key's ILIKE can serve
    # the index; the whole query is matched on the rows it finds (off the index: its other
    # trigrams, blank-padded ones included, would make the index scan follow the table).
    # Everything after reads only the matches (no second scan of messages by uid: the
    # planner costs the uid part of the GIN index far below what it reads for a heavy user).
    found = (
        select(
            Message.id,
            Message.uid,
            Message.conversation_id,
            Message.role,
            Message.message_type,
            Message.run_id,
        )
        .where(*visible_message(p.UID))
        .where(Message.content.ilike(p.KEY_PATTERN, escape=LIKE_ESCAPE))
        .where(_off_index(Message.content).ilike(p.PATTERN, escape=LIKE_ESCAPE))
        .cte("matches")
        .prefix_with("MATERIALIZED")
    )
    m = aliased(Message, found)
    return (
        select(m.id.label("message_id"))
        .join(Conversation, Conversation.id == m.conversation_id)
        .where(*visible_message(p.UID, m), *visible_conversation(p.UID))
        .where(*not_of_run(p.UID, p.RUN if own_run else None, m))
        .order_by(m.id.desc())
        .limit(p.LIMIT)
        .subquery("hits")
    )


@functools.cache
def _search(windowed: bool, own_run: bool) -> Select[*tuple[Any, ...]]:
    hits = _recent_hits(own_run) if windowed else _indexed_hits(own_run)
    position = func.strpos(func.lower(Message.content), func.lower(p.QUERY))
    start = func.greatest(position - SEARCH_SNIPPET_BYTES, 1)
    return (
        select(
            hits.c.message_id,
            Message.role.label("role"),
            Conversation.thread_id.label("thread_id"),
            Conversation.title.label("title"),
            position.label("position"),
            start.label("window_start"),
            func.substr(Message.content, start, p.SNIPPET_CHARS).label("window"),
            func.char_length(Message.content).label("length"),
        )
        .join(Message, Message.id == hits.c.message_id)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .order_by(hits.c.message_id.desc())
    )


def search_statement(
    uid: str,
    query: str,
    limit: int,
    *,
    current_run_id: str | None = None,
    window: int | None = None,
) -> Statement:
    """Newest visible matches (none of ``current_run_id``'s own, see :func:`not_of_run`), each
    with a window of at most ``2 * 512 + len(query)`` characters.

    ``window``: search only the visible ones of the newest ``window`` stored messages (a
    bounded backward walk);
    ``None``: all of them, through the per-user trigram index where the server has one (see
    migration 0005), else by reading the caller's visible messages. Either way the match is the
    same literal ``ILIKE``, so the results are the same.

    A character is at least one byte, so ``SEARCH_SNIPPET_BYTES`` characters either side of the
    match are all a snippet can ever use. The window is cut in SQL around
    ``strpos(lower(content), lower(query))`` (0 when lower-casing moved the match: the window then
    starts at the beginning), and only for the rows that survive the LIMIT.
    """
    statement = _search(window is not None, current_run_id is not None)
    return statement, {
        "uid": uid,
        "query": query,
        "pattern": _pattern(query),
        "key_pattern": _pattern(index_key(query) or query),
        "limit": limit,
        "window": window,
        "run_id": current_run_id,
        "snippet_chars": 2 * SEARCH_SNIPPET_BYTES + len(query),
    }
