"""The one-statement message append behind the thread repository's ``add_message`` and
``add_message_to_thread``: built once, run prebuilt; and its steps as CTEs
(:func:`message_ctes`), for a statement that appends a message among other writes (a new
message's submission, ``yuxi.repositories.runs._submission``)."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import (
    CTE,
    BigInteger,
    ColumnElement,
    String,
    Table,
    bindparam,
    func,
    literal_column,
    select,
    true,
    update,
)
from sqlalchemy.sql import insert

from yuxi.db.models import Conversation, Message
from yuxi.db.prebuilt import PrebuiltStatement
from yuxi.errors import InvalidArgument
from yuxi.vocabulary import MESSAGE_ROLES

_THREADS = cast(Table, Conversation.__table__).c
_MESSAGES = cast(Table, Message.__table__)


def message_ctes(
    *, by_thread: bool, titles: bool = False, only_if: ColumnElement[bool] | None = None
) -> tuple[CTE, CTE]:
    """The two steps of a message append, as CTEs: ``touched`` (the thread's ``updated_at``,
    and with ``titles`` its ``title`` when it has none — ``coalesce(nullif(title, ''),
    :title)`` — ``RETURNING id, uid, updated_at``) and ``added`` (the message, from
    ``touched``: none when the thread is not there, ``RETURNING id``). The parameters are
    :func:`message_params`'s and the thread's (below). ``only_if``: a condition the thread's
    update also needs (a statement that appends a message only when another of its steps wrote
    a row)."""
    table = cast(Table, Conversation.__table__)
    which: tuple[ColumnElement[bool], ...]
    if by_thread:
        which = (
            _THREADS.thread_id == bindparam("thread_id", type_=String),
            _THREADS.uid == bindparam("uid", type_=String),
        )
    else:
        which = (_THREADS.id == bindparam("conversation_id", type_=BigInteger),)
    if only_if is not None:
        which = (*which, only_if)
    values: dict[str, Any] = {"updated_at": func.now()}
    if titles:
        values["title"] = func.coalesce(
            func.nullif(_THREADS.title, literal_column("''")), bindparam("title", type_=String)
        )
    touched = (
        update(table)
        .where(*which)
        .values(**values)
        .returning(_THREADS.id, _THREADS.uid, _THREADS.updated_at)
        .cte("touched")
    )
    columns = _MESSAGES.c
    row = select(
        touched.c.id,
        touched.c.uid,
        bindparam("role", type_=columns.role.type),
        bindparam("message_type", type_=columns.message_type.type),
        bindparam("content", type_=columns.content.type),
        bindparam("metadata", type_=columns.metadata.type),
        bindparam("image_content", type_=columns.image_content.type),
        bindparam("attachments", type_=columns.attachments.type),
        bindparam("run_id", type_=columns.run_id.type),
    )
    names = [
        "conversation_id",
        "uid",
        "role",
        "message_type",
        "content",
        "metadata",
        "image_content",
        "attachments",
        "run_id",
    ]
    added = insert(_MESSAGES).from_select(names, row).returning(columns.id).cte("added")
    return touched, added


def _add_message_statement(*, by_thread: bool) -> PrebuiltStatement:
    """Touch the thread's ``updated_at`` and append the message to it, in one statement::

        WITH touched AS (UPDATE conversations … RETURNING id, uid, updated_at),
             added AS (INSERT INTO messages … SELECT … FROM touched RETURNING id)
        SELECT added.id, touched.uid, touched.updated_at FROM added JOIN touched ON true

    The thread is named by its primary key (``conversation_id``), or (``by_thread``) by its
    ``thread_id`` and owner ``uid``; a thread that is not there gets no message and the
    statement returns no row. The message is owned by the thread's user. (A new message's
    submission also titles an untitled thread: ``message_ctes(titles=True)`` in
    ``yuxi.repositories.runs._submission``.)"""
    touched, added = message_ctes(by_thread=by_thread)
    return PrebuiltStatement(
        select(added.c.id, touched.c.uid, touched.c.updated_at).select_from(
            added.join(touched, true())
        )
    )


ADD_MESSAGE = _add_message_statement(by_thread=False)
ADD_MESSAGE_TO_THREAD = _add_message_statement(by_thread=True)


def message_params(
    role: str,
    content: str,
    message_type: str,
    metadata: dict[str, Any] | None,
    image_content: str | None,
    attachments: list[Any] | None,
    run_id: str | None,
) -> dict[str, Any]:
    if role not in MESSAGE_ROLES:
        raise InvalidArgument(f"unknown message role {role!r}")
    return {
        "role": role,
        "message_type": message_type,
        "content": content,
        "metadata": dict(metadata or {}),
        "image_content": image_content,
        "attachments": attachments,
        "run_id": run_id,
    }
