"""The history search's query and its shown rows: a query's quoted phrases and terms (the
same rule as the stored messages: ``yuxi_query_terms``, migration 0012), the thread filter, and
what is read of the ranked messages (the visibility rule applied again). The ranking itself is
in :mod:`._history_search`.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from sqlalchemy import ARRAY, BigInteger, Select, Text, bindparam, func, or_, select, true
from sqlalchemy.orm import aliased

from yuxi.db.models import Conversation, Message
from yuxi.limits import SEARCH_CONTEXT_READ_CHARS
from yuxi.repositories.lookback import _params as p
from yuxi.repositories.lookback._params import Statement
from yuxi.repositories.lookback.visibility import (
    own_run_chain,
    visible_conversation,
    visible_message,
)

__all__ = [
    "LIKE_ESCAPE",
    "details_statement",
    "escape_like",
    "split_phrases",
    "terms_statement",
    "thread_filter_statement",
]

LIKE_ESCAPE = "\\"

_TEXTS = bindparam("texts", type_=ARRAY(Text()))
_IDS = bindparam("ids", type_=ARRAY(BigInteger()))


def escape_like(value: str) -> str:
    """``value`` as a literal for ``LIKE … ESCAPE '\\'``: the escape itself first, then % and _."""
    return (
        value.replace(LIKE_ESCAPE, LIKE_ESCAPE * 2)
        .replace("%", LIKE_ESCAPE + "%")
        .replace("_", LIKE_ESCAPE + "_")
    )


# -- the query ---------------------------------------------------------------------------------

#: A quoted phrase: straight double quotes, or typographic ones (as models often write them).
_PHRASE = re.compile(r'"([^"]*)"|\u201c([^\u201d]*)\u201d')


def split_phrases(query: str) -> tuple[str, list[str]]:
    """``(free text, quoted phrases)`` of ``query``. A phrase is what stands between a pair of
    quotes, stripped; an empty one is ignored, an unpaired quote is ordinary text."""
    phrases: list[str] = []

    def take(match: re.Match[str]) -> str:
        phrase = (match.group(1) if match.group(1) is not None else match.group(2)).strip()
        if phrase:
            phrases.append(phrase)
        return " "

    return _PHRASE.sub(take, query), phrases


@functools.cache
def _terms() -> Select[*tuple[Any, ...]]:
    texts = func.unnest(_TEXTS).table_valued("value", with_ordinality="ord").render_derived()
    return select(texts.c.ord, func.yuxi_query_terms(texts.c.value)).order_by(texts.c.ord)


def terms_statement(texts: list[str]) -> Statement:
    """The terms of each of ``texts`` (in order): ``yuxi_query_terms``, the stored messages'
    rule less the single characters of a longer Han/kana run (a query's ``乌龙茶`` ranks by its
    bigrams; a lone ``茶`` is its own term and finds the character inside runs)."""
    return _terms(), {"texts": texts}


# -- the returned rows -----------------------------------------------------------------------


def _neighbour(side: str, chain: Select[Any] | None) -> Any:
    """The visible message just ``before`` / ``after`` the hit in its thread (by id: a thread's
    messages are written in order), as a LATERAL subquery: its role, the part of its text nearest
    the hit (at most ``SEARCH_CONTEXT_READ_CHARS`` characters read), and whether it holds more.
    The record's rules hold for it: its owner, role and type, and never the searching run's own
    messages (``chain``: the searching run's, see :func:`.visibility.own_run_chain`)."""
    n = aliased(Message)
    earlier = side == "before"
    read = func.right if earlier else func.left
    return (
        select(
            n.id.label("id"),
            n.role.label("role"),
            read(n.content, SEARCH_CONTEXT_READ_CHARS).label("content"),
            (func.char_length(n.content) > SEARCH_CONTEXT_READ_CHARS).label("more"),
        )
        .where(
            n.conversation_id == Message.conversation_id,
            n.id < Message.id if earlier else n.id > Message.id,
            *visible_message(p.UID, n),
            *([] if chain is None else [or_(n.run_id.is_(None), n.run_id.not_in(chain))]),
        )
        .order_by(n.id.desc() if earlier else n.id.asc())
        .limit(1)
        .lateral(f"{side}_message")
    )


@functools.cache
def _details(own_run: bool) -> Select[*tuple[Any, ...]]:
    # One run chain for both sides (one CTE in the statement).
    chain = own_run_chain(p.UID, p.RUN) if own_run else None
    before = _neighbour("before", chain)
    after = _neighbour("after", chain)
    return (
        select(
            Message.id.label("message_id"),
            Message.role,
            Message.content,
            Message.created_at,
            Conversation.thread_id,
            Conversation.title,
            before.c.id.label("before_id"),
            before.c.role.label("before_role"),
            before.c.content.label("before_content"),
            before.c.more.label("before_more"),
            after.c.id.label("after_id"),
            after.c.role.label("after_role"),
            after.c.content.label("after_content"),
            after.c.more.label("after_more"),
        )
        .select_from(Message)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .outerjoin(before, true())
        .outerjoin(after, true())
        .where(Message.id == func.any(_IDS))
        .where(
            *visible_message(p.UID),
            *visible_conversation(p.UID, owner_view=p.OWNER_VIEW),
        )
    )


def details_statement(uid: str, ids: list[int], current_run_id: str | None = None) -> Statement:
    """What is shown of the ranked rows (the visibility rule applied again), each with the
    visible message before and after it in its thread (``before_*`` / ``after_*``, NULL at a
    thread's edge)."""
    return _details(current_run_id is not None), {
        "uid": uid,
        "ids": ids,
        "run_id": current_run_id,
    }


@functools.cache
def _thread_filter() -> Select[*tuple[Any, ...]]:
    return select(Conversation.id).where(
        Conversation.thread_id == p.THREAD, *visible_conversation(p.UID)
    )


def thread_filter_statement(uid: str, thread_id: str) -> Statement:
    """The id of ``thread_id`` if the caller may see it (else no row)."""
    return _thread_filter(), {"uid": uid, "thread_id": thread_id}
