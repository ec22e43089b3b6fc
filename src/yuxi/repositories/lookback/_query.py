"""The history search's query and its shown rows: a query's quoted phrases and terms (the
same rule as the stored messages: ``yuxi_query_terms``, migration 0012), the thread filter, and
what is read of the ranked messages (the visibility rule applied again). The ranking itself is
in :mod:`._history_search`.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from sqlalchemy import ARRAY, BigInteger, Select, Text, bindparam, func, select

from yuxi.db.models import Conversation, Message
from yuxi.repositories.lookback import _params as p
from yuxi.repositories.lookback._params import Statement
from yuxi.repositories.visibility import visible_conversation, visible_message

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


@functools.cache
def _details() -> Select[*tuple[Any, ...]]:
    return (
        select(
            Message.id.label("message_id"),
            Message.role,
            Message.content,
            Message.created_at,
            Conversation.thread_id,
            Conversation.title,
        )
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(Message.id == func.any(_IDS))
        .where(*visible_message(p.UID), *visible_conversation(p.UID))
    )


def details_statement(uid: str, ids: list[int]) -> Statement:
    """What is shown of the ranked rows (the visibility rule applied again)."""
    return _details(), {"uid": uid, "ids": ids}


@functools.cache
def _thread_filter() -> Select[*tuple[Any, ...]]:
    return select(Conversation.id).where(
        Conversation.thread_id == p.THREAD, *visible_conversation(p.UID)
    )


def thread_filter_statement(uid: str, thread_id: str) -> Statement:
    """The id of ``thread_id`` if the caller may see it (else no row)."""
    return _thread_filter(), {"uid": uid, "thread_id": thread_id}
