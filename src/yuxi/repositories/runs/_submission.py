"""The statements of a run's submission, built once on the table and run prebuilt
(:mod:`yuxi.db.prebuilt`): every chat message inserts a run."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CTE, String, Table, bindparam, literal_column, or_, select, true
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.dialects.postgresql import insert

from yuxi.db.models import AgentRun, Conversation
from yuxi.db.notifications import RUN_PENDING
from yuxi.db.prebuilt import PrebuiltStatement
from yuxi.repositories.message_statements import message_ctes
from yuxi.repositories.notify import notify_value
from yuxi.repositories.runs.run_event_repository import append_insert
from yuxi.vocabulary import CLAIMABLE_RUN_TYPES

__all__ = ["INSERT_RUN", "NEW_RUN_FIELDS", "SUBMIT_MESSAGE", "run_of"]

_TABLE = cast(Table, AgentRun.__table__)
_RUNS = _TABLE.c
_THREADS = cast(Table, Conversation.__table__).c


def _latest_top_level(*columns: Any) -> Any:
    """The newest chat/resume run of the thread ``thread_id``."""
    where = [
        AgentRun.conversation_thread_id == bindparam("thread_id", type_=String),
        # SQL literals, not an IN list of bind parameters (an expanding list is rendered per
        # call): the insert of a new run asks this prebuilt.
        or_(*(AgentRun.run_type == literal_column(f"'{t}'") for t in CLAIMABLE_RUN_TYPES)),
    ]
    return (
        select(*columns)
        .where(*where)
        .order_by(AgentRun.created_at.desc(), AgentRun.id.desc())
        .limit(1)
    )


_LATEST_STATUS = _latest_top_level(AgentRun.status)

#: The columns a new run is inserted with, in order (:func:`_insert_run`).
NEW_RUN_FIELDS = (
    "id",
    "uid",
    "conversation_thread_id",
    "request_id",
    "run_type",
    "status",
    "input_payload",
    "created_by_run_id",
)
#: Each attribute of AgentRun and the column it maps (a row read back becomes an entity).
_RUN_ATTRIBUTES = tuple(
    (attribute.key, attribute.columns[0].name) for attribute in sa_inspect(AgentRun).column_attrs
)


def _run_insert(*, unless_awaiting_decision: bool, wakes: bool, on: CTE | None = None) -> Any:
    """``INSERT INTO agent_runs … SELECT <values> [FROM on] [WHERE <thread not awaiting a
    decision>] ON CONFLICT (uid, request_id) DO NOTHING RETURNING <the row>[,
    pg_notify(run_pending)]``. The values are the parameters ``v_<column>`` (SQLAlchemy keeps
    the columns' own names for itself) — but with ``on``, a thread's row the insert needs (no
    row, no run), the run's owner and thread are that row's own ``uid`` and ``thread_id``: the
    values written are the table's, never a caller's string (which PostgreSQL would refuse for
    the column when too long, even with no row to insert)."""
    taken = {} if on is None else {"uid": on.c.uid, "conversation_thread_id": on.c.thread_id}
    row = select(
        *(
            taken.get(name, bindparam(f"v_{name}", type_=_RUNS[name].type))
            for name in NEW_RUN_FIELDS
        )
    )
    if on is not None:
        row = row.select_from(on)
    if unless_awaiting_decision:
        # The awaiting check in the insert itself: the thread's latest run as the insert
        # sees it, not as an earlier read did.
        latest = _LATEST_STATUS.scalar_subquery()
        row = row.where(latest.is_distinct_from("interrupted"))
    # The whole row as the database wrote it (server defaults included), in the insert; a
    # pending chat/resume run wakes a worker (a RETURNING notification fires only for a row
    # actually written, when the transaction commits).
    returned = [*_TABLE.c, notify_value(RUN_PENDING, _RUNS.id)] if wakes else [*_TABLE.c]
    return (
        insert(_TABLE)
        # The other columns take their server defaults (a Python-side default is computed per
        # execution by SQLAlchemy, which a prebuilt statement skips).
        .from_select(list(NEW_RUN_FIELDS), row, include_defaults=False)
        .on_conflict_do_nothing(index_elements=[_RUNS.uid, _RUNS.request_id])
        .returning(*returned)
    )


#: The insert of a run (:func:`_run_insert`), built once on the table and run prebuilt, by
#: (unless_awaiting_decision, wakes).
INSERT_RUN = {
    (unless, wakes): PrebuiltStatement(_run_insert(unless_awaiting_decision=unless, wakes=wakes))
    for unless in (False, True)
    for wakes in (False, True)
}


def _submission_statement() -> PrebuiltStatement:
    """A new message's whole submission in one statement, sent outside a transaction block:
    the thread (the caller's, ``active``) held ``FOR SHARE``; the pending chat run on it (as
    ``INSERT_RUN[True, True]``: not while the thread awaits a decision, idempotent on the
    request, waking a worker); and — only when that run was written — the user's message on the
    thread (the thread touched, and titled ``:title`` if it has no title, ``message_ctes``) and
    the run's ``pending`` event (``append_insert``, notifying its listeners)::

        WITH thread AS (SELECT id, uid, thread_id FROM conversations
                        WHERE thread_id = :thread_id AND uid = :uid AND status = 'active'
                        FOR SHARE),
             run AS (INSERT INTO agent_runs … SELECT <thread.uid, thread.thread_id, …>
                     FROM thread WHERE <not awaiting>
                     ON CONFLICT DO NOTHING RETURNING …),
             touched AS (UPDATE conversations … WHERE thread_id = :thread_id AND uid = :uid
                         AND EXISTS (SELECT FROM run) RETURNING …),
             added AS (INSERT INTO messages … SELECT … FROM touched RETURNING id),
             pending AS (INSERT INTO run_events … WHERE EXISTS (SELECT FROM run) RETURNING …)
        SELECT run.*, added.id AS message_id, pending.seq AS event_seq
        FROM run LEFT JOIN added ON true LEFT JOIN pending ON true

    No row: no run was written — the thread is not the caller's, not there or not active, the
    request already has its run, or the thread awaits a decision (the caller reads which).

    The thread's lock is why no read comes first and why the message cannot be missing: the
    run's insert needs the ``thread`` row, which PostgreSQL locks and checks again on its newest
    version (a delete, archive or hand-over committed meanwhile excludes it; one in flight is
    waited for), and once locked the row stays the caller's and active until the statement
    commits — so ``touched`` finds it. The message's and the event's ``run_id`` is the run's
    own ``v_id``."""
    thread = (
        select(_THREADS.id, _THREADS.uid, _THREADS.thread_id)
        .where(
            _THREADS.thread_id == bindparam("thread_id", type_=String),
            _THREADS.uid == bindparam("uid", type_=String),
            _THREADS.status == literal_column("'active'"),
        )
        .with_for_update(read=True)
        .cte("thread")
    )
    run = _run_insert(unless_awaiting_decision=True, wakes=True, on=thread).cte("run")
    written = select(literal_column("1")).select_from(run).exists()
    _touched, added = message_ctes(by_thread=True, titles=True, only_if=written)
    pending = append_insert(only_if=written).cte("pending")
    return PrebuiltStatement(
        select(
            *(run.c[column.name] for column in _TABLE.c),
            added.c.id.label("message_id"),
            pending.c.seq.label("event_seq"),
        ).select_from(run.outerjoin(added, true()).outerjoin(pending, true()))
    )


SUBMIT_MESSAGE = _submission_statement()


def run_of(row: Any) -> AgentRun:
    """The run a prebuilt statement returned whole, as an entity (not in any session: a run
    just written is only read)."""
    return AgentRun(**{key: getattr(row, name) for key, name in _RUN_ATTRIBUTES})
