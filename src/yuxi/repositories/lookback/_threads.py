"""``list_threads``: the caller's visible threads, newest last message first (the SQL; the
service shapes the rows).

One statement (:func:`threads_statement`) carries the whole visibility rule of
:mod:`._history_visibility`: a thread is listed when it is visible and holds at least one
visible message; its *last message* is its newest visible message (by id, walking
``(conversation_id, id DESC)``), and the listing is ordered by that message's ``created_at``,
newest first, ties newest thread (``conversations.id``) first. With ``before``, only threads
whose last visible message is strictly earlier are listed.

**Why ``updated_at`` may bound the candidates.** Every message is written by
``ThreadRepository.add_message``, which sets the thread's ``updated_at`` to ``now()`` in
the transaction that inserts the message (whose ``created_at`` is the same ``now()``), and the
only other writer of ``updated_at`` (``set_status``) sets it to ``now()`` as well: so
``updated_at`` is never older than the thread's last message (``L <= updated_at``; proved on the
write path by ``tests/integration/test_list_threads.py``). Then, for *any* ``k`` listable threads
whose oldest last message is ``t``, the ``k`` newest listable threads all have ``L >= t`` and
therefore ``updated_at >= t``. The statement takes those ``k`` from the ``(uid, updated_at)``
index (the newest updated ones, below ``before`` when it is given, where ``L < before`` holds
by itself), reads ``t``, and ranks only the threads with ``updated_at >= t``: usually about
``k`` of them, each one backward probe of ``(conversation_id, id)``. Fewer than ``k`` such
threads: every visible thread of the user is a candidate (there are then at most ``k``
listable ones below ``before``, or the user has few threads). ``message_count`` and the first
user message are read for the ``limit + 1`` threads kept, and for no other.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    DateTime,
    Integer,
    Select,
    String,
    Text,
    bindparam,
    case,
    func,
    literal,
    literal_column,
    or_,
    select,
    true,
)

from yuxi.db.models import Conversation, Message
from yuxi.limits import FIRST_USER_LINE_BYTES
from yuxi.repositories.lookback import _params as p
from yuxi.repositories.lookback._params import Statement
from yuxi.repositories.lookback.visibility import visible_conversation, visible_message

__all__ = [
    "FIRST_LINE_CHARS",
    "LEADING_BLANKS",
    "threads_statement",
]

BEFORE = bindparam("before", type_=DateTime(timezone=True))
#: ``limit + 1``: one thread more than asked tells whether there are more.
ENOUGH = bindparam("enough", type_=Integer())
#: The thread the asking run belongs to: left out, since the model is in it already.
EXCEPT_THREAD = bindparam("except_thread", None, type_=String())

#: Blanks trimmed (in SQL, then in Python) before a first user message's first line.
LEADING_BLANKS = " \t\r\n\v\f\u00a0\u3000"
#: Characters of the (left-trimmed) first user message read: one more than its budget in bytes,
#: so a line that needs cutting is always seen to need it (a character is at least one byte,
#: and framing only ever lengthens text).
FIRST_LINE_CHARS = FIRST_USER_LINE_BYTES + 1
_MINUS_INFINITY = literal_column("'-infinity'::timestamptz", DateTime(timezone=True))


def _last_message() -> Any:
    """The newest visible message of the enclosing query's ``Conversation`` row."""
    return (
        select(Message.id.label("last_id"), Message.created_at.label("last_at"))
        .where(Message.conversation_id == Conversation.id, *visible_message(p.UID))
        .order_by(Message.id.desc())
        .limit(1)
        .lateral("last_message")
    )


def _not_current() -> ColumnElement[bool]:
    return or_(EXCEPT_THREAD.is_(None), Conversation.thread_id != EXCEPT_THREAD)


@functools.cache
def _threads(with_before: bool) -> Select[*tuple[Any, ...]]:
    # The bound t: the oldest last message among k listable threads, or -infinity if there
    # are fewer than k (module docstring).
    last = _last_message()
    sample = (
        select(last.c.last_at)
        .select_from(Conversation)
        .join(last, true())
        .where(*visible_conversation(p.UID), _not_current())
        .order_by(Conversation.updated_at.desc())
        .limit(ENOUGH)
    )
    if with_before:
        sample = sample.where(Conversation.updated_at < BEFORE, last.c.last_at < BEFORE)
    sampled = sample.cte("sampled")
    bound = select(
        case((func.count() == ENOUGH, func.min(sampled.c.last_at)), else_=_MINUS_INFINITY)
    ).scalar_subquery()

    last = _last_message()
    top = (
        select(
            Conversation.id,
            Conversation.thread_id,
            Conversation.title,
            Conversation.created_at,
            last.c.last_at,
        )
        .select_from(Conversation)
        .join(last, true())
        .where(*visible_conversation(p.UID), _not_current(), Conversation.updated_at >= bound)
        .order_by(last.c.last_at.desc(), Conversation.id.desc())
        .limit(ENOUGH)
    )
    if with_before:
        top = top.where(last.c.last_at < BEFORE)
    ranked = top.subquery("ranked")

    counted = (
        select(func.count().label("message_count"))
        .where(Message.conversation_id == ranked.c.id, *visible_message(p.UID))
        .lateral("counted")
    )
    trimmed = func.ltrim(Message.content, literal(LEADING_BLANKS, Text()), type_=Text)
    first = (
        select(func.left(trimmed, FIRST_LINE_CHARS, type_=Text).label("first_text"))
        .where(
            Message.conversation_id == ranked.c.id,
            *visible_message(p.UID),
            Message.role == "user",
        )
        .order_by(Message.id.asc())
        .limit(1)
        .lateral("first_user")
    )
    return (
        select(
            ranked.c.thread_id,
            ranked.c.title,
            ranked.c.created_at,
            ranked.c.last_at,
            counted.c.message_count,
            first.c.first_text,
        )
        .select_from(ranked)
        .join(counted, true())
        .outerjoin(first, true())
        .order_by(ranked.c.last_at.desc(), ranked.c.id.desc())
    )


def threads_statement(
    uid: str, *, before: datetime | None, limit: int, except_thread: str | None = None
) -> Statement:
    """Up to ``limit + 1`` rows ``(thread_id, title, created_at, last_at, message_count,
    first_text)``, newest last message first; ``before`` (aware) excludes every thread whose
    last visible message is at or after it; ``except_thread`` (the asking run's) is left out."""
    values: dict[str, Any] = {"uid": uid, "enough": limit + 1, "except_thread": except_thread}
    if before is not None:
        values["before"] = before
    return _threads(before is not None), values
