"""The SQL of the history tools: visibility, field allowlist, literal ILIKE.

Visibility is never a Python filter. Every statement here carries the whole rule in its WHERE
clause, so ``LIMIT`` only ever counts rows the caller may see:

* conversation: ``uid`` = caller, ``status = 'active'``, ``source NOT IN ('agent_call',
  'agent_evaluation')``, not ``recall_excluded`` by its owner, and ``NOT EXISTS`` a
  ``subagent_threads`` row naming it as the child;
* message: ``uid`` = caller too (the denormalised owner), ``role IN ('user', 'assistant')``,
  ``message_type IN VISIBLE_MESSAGE_TYPES`` and ``NOT IN HIDDEN_MESSAGE_TYPES``;
* search only: not a message of the searching run itself (its run, or the interrupted runs it
  resumes), so ``search history: Q`` never finds its own question first.

Statements select explicit columns only (never an ORM entity), so metadata, image_content,
attachments and run_id are never even read (run_id only filters). Long text is cut in SQL to
what a budget can use.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import ColumnElement, Select, Text, TextClause, func, literal, or_, select, text
from sqlalchemy.orm import aliased

from yuxi.db.models import AgentRun, Conversation, Message, SubagentThread, ToolCall
from yuxi.limits import (
    READ_MESSAGE_BYTES,
    SEARCH_SNIPPET_BYTES,
    SEARCH_TRIGRAM_MIN_CHARS,
    TOOL_ITEM_BYTES,
    TOOLS_MAX_ITEMS,
)
from yuxi.vocabulary import HIDDEN_SOURCES

VISIBLE_ROLES = ("user", "assistant")
#: Never shown, whatever the allowlist below says (defence in depth).
HIDDEN_MESSAGE_TYPES = ("tool_call", "tool_result", "audit", "system_audit")
#: The allowlist. Only ordinary conversational text; any type added later (images, cards,
#: audit records, ...) stays hidden until someone decides it is ordinary and lists it here.
VISIBLE_MESSAGE_TYPES = ("text",)

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


def is_subagent_child() -> ColumnElement[bool]:
    """The conversation is a persisted SubAgent thread (a child of another thread)."""
    return (
        select(SubagentThread.id)
        .where(SubagentThread.child_conversation_id == Conversation.id)
        .exists()
    )


def visible_conversation(uid: str) -> list[ColumnElement[bool]]:
    return [
        Conversation.uid == uid,
        Conversation.status == "active",
        Conversation.source.not_in(HIDDEN_SOURCES),
        Conversation.recall_excluded.is_(False),
        ~is_subagent_child(),
    ]


def visible_message(uid: str, m: Any = Message) -> list[ColumnElement[bool]]:
    """``m``: ``Message`` or an alias of it (e.g. over a subquery of its columns)."""
    return [
        m.uid == uid,
        m.role.in_(VISIBLE_ROLES),
        m.message_type.in_(VISIBLE_MESSAGE_TYPES),
        m.message_type.not_in(HIDDEN_MESSAGE_TYPES),
    ]


def own_run_chain(uid: str, run_id: str) -> Select[Any]:
    """The ids of run ``run_id`` of ``uid`` and of every run it resumes (``created_by_run_id``,
    recursively): the runs whose messages belong to the current request."""
    chain = (
        select(AgentRun.id, AgentRun.created_by_run_id)
        .where(AgentRun.id == run_id, AgentRun.uid == uid)
        .cte("own_run_chain", recursive=True)
    )
    earlier = aliased(AgentRun)
    chain = chain.union(
        select(earlier.id, earlier.created_by_run_id)
        .join(chain, earlier.id == chain.c.created_by_run_id)
        .where(earlier.uid == uid)
    )
    return select(chain.c.id)


def not_of_run(uid: str, run_id: str | None, m: Any = Message) -> list[ColumnElement[bool]]:
    """Leave out the messages of the current run (and of the runs it resumes)."""
    if run_id is None:
        return []
    return [or_(m.run_id.is_(None), m.run_id.not_in(own_run_chain(uid, run_id)))]


def _visible_messages(uid: str, *columns: Any, m: Any = Message) -> Select[Any]:
    return (
        select(*columns)
        .join(Conversation, Conversation.id == m.conversation_id)
        .where(*visible_message(uid, m), *visible_conversation(uid))
    )


def _newest(uid: str, window: int) -> Any:
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


def recent_count_statement(uid: str, window: int, current_run_id: str | None) -> Select[Any]:
    """``(stored, visible)``: how many of the newest ``window + 1`` stored messages of ``uid``
    there are (at most ``window``: that is the whole history), and how many of the newest
    ``window`` the search may see."""
    m = _newest(uid, window)
    visible = (
        select(m.id)
        .join(Conversation, Conversation.id == m.conversation_id)
        .where(*visible_message(uid, m), *visible_conversation(uid))
        .where(*not_of_run(uid, current_run_id, m))
    )
    return select(
        select(func.count()).select_from(_newest(uid, window + 1)).scalar_subquery(),
        select(func.count()).select_from(visible.subquery()).scalar_subquery(),
    )


def _pattern(query: str) -> str:
    return "%" + escape_like(query) + "%"


def _recent_hits(uid: str, query: str, limit: int, window: int, run: str | None) -> Any:
    m = _newest(uid, window)
    return (
        _visible_messages(uid, m.id.label("message_id"), m=m)
        .where(*not_of_run(uid, run, m))
        .where(m.content.ilike(_pattern(query), escape=LIKE_ESCAPE))
        .order_by(m.id.desc())
        .limit(limit)
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
    return column.op("||")(literal("", Text))


def _indexed_hits(uid: str, query: str, limit: int, run: str | None) -> Any:
    # All matching visible messages, found in one scan that is computed apart (MATERIALIZED, no
    # ORDER BY/LIMIT inside): the planner picks the cheapest way to find *all* of the caller's
    # candidates — the (uid, content) trigram index where it exists — and cannot walk
    # (uid, id DESC) hoping for an early LIMIT (that walk reads the whole history when the term
    # is common in the table but rare for the caller). Only the index key's ILIKE can serve
    # the index; the whole query is matched on the rows it finds (off the index: its other
    # trigrams, blank-padded ones included, would make the index scan follow the table).
    # Everything after reads only the matches (no second scan of messages by uid: the
    # planner costs the uid part of the GIN index far below what it reads for a heavy user).
    key = index_key(query) or query
    found = (
        select(
            Message.id,
            Message.uid,
            Message.conversation_id,
            Message.role,
            Message.message_type,
            Message.run_id,
        )
        .where(*visible_message(uid))
        .where(Message.content.ilike(_pattern(key), escape=LIKE_ESCAPE))
        .where(_off_index(Message.content).ilike(_pattern(query), escape=LIKE_ESCAPE))
        .cte("matches")
        .prefix_with("MATERIALIZED")
    )
    m = aliased(Message, found)
    return (
        select(m.id.label("message_id"))
        .join(Conversation, Conversation.id == m.conversation_id)
        .where(*visible_message(uid, m), *visible_conversation(uid))
        .where(*not_of_run(uid, run, m))
        .order_by(m.id.desc())
        .limit(limit)
        .subquery("hits")
    )


def search_statement(
    uid: str,
    query: str,
    limit: int,
    *,
    current_run_id: str | None = None,
    window: int | None = None,
) -> Select[Any]:
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
    hits = (
        _indexed_hits(uid, query, limit, current_run_id)
        if window is None
        else _recent_hits(uid, query, limit, window, current_run_id)
    )
    position = func.strpos(func.lower(Message.content), func.lower(literal(query, Text)))
    start = func.greatest(position - SEARCH_SNIPPET_BYTES, 1)
    return (
        select(
            hits.c.message_id,
            Message.role.label("role"),
            Conversation.thread_id.label("thread_id"),
            Conversation.title.label("title"),
            position.label("position"),
            start.label("window_start"),
            func.substr(Message.content, start, 2 * SEARCH_SNIPPET_BYTES + len(query)).label(
                "window"
            ),
            func.char_length(Message.content).label("length"),
        )
        .join(Message, Message.id == hits.c.message_id)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .order_by(hits.c.message_id.desc())
    )


def thread_statement(uid: str, thread_id: str) -> Select[Any]:
    columns: tuple[Any, ...] = (Conversation.id, Conversation.thread_id, Conversation.title)
    return select(*columns).where(Conversation.thread_id == thread_id, *visible_conversation(uid))


def _content_prefix() -> ColumnElement[str]:
    # One character more than the budget: enough for truncate_utf8 to cut exactly as it would
    # cut the whole text (every character is at least one byte).
    return func.left(Message.content, READ_MESSAGE_BYTES + 1, type_=Text).label("content")


def conversation_visible(uid: str, conversation_id: int) -> ColumnElement[bool]:
    """The conversation ``conversation_id`` is visible to ``uid``, as one uncorrelated
    ``EXISTS``: PostgreSQL evaluates it once, before the scan (a one-time filter), so the
    statement it guards reads one table and can walk ``(conversation_id, id)`` in order."""
    return (
        select(Conversation.id)
        .where(Conversation.id == conversation_id, *visible_conversation(uid))
        .exists()
    )


def thread_messages(uid: str, conversation_id: int) -> Select[Any]:
    """The visible messages of one thread. Not a join: with the conversation joined, the planner
    put the thread's rows under a nested loop, so ``ORDER BY id LIMIT n`` could not stop early
    and every read fetched and sorted the whole thread (a 2,000-message thread at 10M rows:
    48 ms for 19 rows; with this shape and migration 0006's statistics, under 1 ms)."""
    columns: tuple[Any, ...] = (Message.id, Message.role, _content_prefix())
    return (
        select(*columns)
        .where(Message.conversation_id == conversation_id, *visible_message(uid))
        .where(conversation_visible(uid, conversation_id))
    )


def tool_calls_statement(uid: str, conversation_id: int) -> Select[Any]:
    """The newest tool calls of one visible thread, allowlisted columns only."""
    return (
        select(
            ToolCall.id,
            ToolCall.tool_call_id,
            ToolCall.name,
            ToolCall.input,
            func.left(ToolCall.output, TOOL_ITEM_BYTES + 1, type_=Text).label("output"),
            ToolCall.status,
            func.left(ToolCall.error, TOOL_ITEM_BYTES + 1, type_=Text).label("error"),
        )
        .join(Message, Message.id == ToolCall.message_id)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(
            Conversation.id == conversation_id,
            Message.uid == uid,
            Message.conversation_id == conversation_id,
            *visible_conversation(uid),
        )
        .order_by(ToolCall.id.desc())
        .limit(TOOLS_MAX_ITEMS)
    )
