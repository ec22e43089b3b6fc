"""One step of a run's record as one statement, fenced by the run's lease (issue 35).

A step — the run's start, the model's tool calls, the tools' results, the reply with the run's
end — used to be a transaction: ``BEGIN``, the lease fence, a statement per write, ``COMMIT``
(six round trips for a step with one message). :func:`step_statement` builds the same writes as
one statement of data-modifying CTEs, sent outside a transaction block (one round trip; a
single statement is atomic by itself)::

    WITH fence    AS (SELECT id FROM agent_runs WHERE <owned live lease> FOR SHARE),
         ids      AS (SELECT nextval(<messages' sequence>) AS id, m.value, m.n
                      FROM jsonb_array_elements(:messages) WITH ORDINALITY m
                      WHERE EXISTS (SELECT FROM fence)),
         touched  AS (UPDATE conversations SET updated_at = now()
                      WHERE <the run's thread> AND EXISTS (SELECT FROM fence) RETURNING …),
         added    AS (INSERT INTO messages (id, …) SELECT … FROM ids, touched ORDER BY n),
         calls    AS (INSERT INTO tool_calls … FROM jsonb_array_elements(:new_calls) … WHERE go),
         finished AS (UPDATE tool_calls … the newest call of each id in the thread … WHERE go),
         closed   AS (UPDATE tool_calls … <open in thread> AND id NOT IN finished AND go),
         run      AS (UPDATE agent_runs SET <snapshot | end> WHERE <owned live lease> AND go),
         events   AS (INSERT INTO run_events … FROM jsonb_array_elements(:events) … WHERE go)
    SELECT EXISTS (SELECT FROM fence) AS fenced, EXISTS (SELECT FROM touched) AS threaded, …

Only the parts a step has are in its statement (:class:`StepShape`; one prebuilt statement per
shape, built on first use). The rules it keeps, each as the transaction kept it:

* **The fence first, and nothing without it.** ``go`` is ``EXISTS (fence)`` — and, when the
  step appends messages, ``EXISTS (touched)``: every write is conditioned on it. The fence's
  ``FOR SHARE`` is taken before any write (each write's condition reads it), so a lease change
  waits for the statement, and one committed first is seen: nothing is written.
* **A thread gone fails the whole step.** Its messages need the thread's row (``touched``);
  every other write needs ``touched`` too, through ``go`` — the run's end included. The caller
  sees ``threaded`` false and nothing was written. A thread that changes hands while the
  statement waits for its row is checked again on the row it then locks (PostgreSQL re-checks
  an ``UPDATE``'s condition on the newest version of a row it waited for).
* **The CTEs share one snapshot** and do not see each other's rows. So a message's id is drawn
  from the sequence first (``ids``), and the tool-call rows and events that name a message
  take its id from there (by its ordinal in ``messages``); a call finished in the step it is
  proposed in is inserted finished, and one the step closes is inserted closed (folded before
  the statement: :meth:`yuxi.repositories.runs.step_repository.StepWrites.parameters`); a call
  the step finishes is kept out of the step's close (``NOT IN finished``: one row is never
  updated twice). The snapshot is taken before the statement waits for a lock: what it only
  reads — the run's last event seq — is as of its start. Only the
  lease's owner appends to a running run's events (reconciliation does once the lease is gone,
  and then the fence refuses the step), so no wait can hide an event from it.
* **The lock order is the transaction's**: the run's row (the fence), then the thread's row
  (``touched``), then the rows the step writes. (Moving the fence to the end, as the issue
  weighed, would take the thread's row first; keeping it first needs no new deadlock
  analysis.)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from sqlalchemy import (
    CTE,
    BigInteger,
    ColumnElement,
    String,
    Table,
    and_,
    bindparam,
    case,
    column,
    func,
    insert,
    literal_column,
    select,
    true,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB

from yuxi.db.models import AgentRun, Conversation, Message, RunEvent, ToolCall
from yuxi.db.notifications import RUN_EVENTS
from yuxi.db.prebuilt import PrebuiltStatement
from yuxi.repositories.notify import notify_value
from yuxi.repositories.runs._lease import owned_live_lease
from yuxi.repositories.runs.tool_call_repository import open_in_thread

__all__ = ["StepShape", "step_statement"]

_RUNS = cast(Table, AgentRun.__table__)
_THREADS = cast(Table, Conversation.__table__)
_MESSAGES = cast(Table, Message.__table__)
_CALLS = cast(Table, ToolCall.__table__)
_EVENTS = cast(Table, RunEvent.__table__)
#: The sequence a message's id comes from: the one ``messages.id`` owns (its ``BIGSERIAL``),
#: found by the column, not by a name.
_MESSAGE_IDS: ColumnElement[Any] = func.pg_get_serial_sequence(
    literal_column("'messages'"), literal_column("'id'")
)


@dataclass(frozen=True)
class StepShape:
    """What a step writes besides its events (which every step may have)."""

    #: Messages appended to the run's thread (the thread touched).
    messages: bool = False
    #: New tool-call rows, each on one of the step's messages.
    new_calls: bool = False
    #: Tool calls of the thread finished (the newest row of each tool-call id).
    finished_calls: bool = False
    #: The thread's open tool calls closed with an error (its run ended first).
    closes_calls: bool = False
    #: The memory snapshot the run sees, on its row.
    snapshot: bool = False
    #: The run's end, on its row.
    finishes: bool = False


def _elements(name: str, alias: str, *, ordinal: bool = False) -> Any:
    """``jsonb_array_elements(:name) [WITH ORDINALITY] AS alias(value[, n])``."""
    function = func.jsonb_array_elements(bindparam(name, type_=JSONB))
    if ordinal:
        valued = function.table_valued(column("value", JSONB), with_ordinality="n")
    else:
        valued = function.table_valued(column("value", JSONB))
    return valued.render_derived(name=alias)


def _text(value: Any, key: str) -> Any:
    return value.op("->>", return_type=String)(key)


def _json(value: Any, key: str) -> Any:
    return value.op("->", return_type=JSONB)(key)


def _exists(cte: CTE) -> ColumnElement[bool]:
    return select(literal_column("1")).select_from(cte).exists()


@cache
def step_statement(shape: StepShape) -> PrebuiltStatement:
    """The statement of a step of ``shape`` (built once per shape; see the module docstring).

    Parameters: ``run_id``, ``worker_id``, ``uid``, ``thread_id``, ``events`` (``[{"type",
    "data", "message"?}]``: ``message``, a 1-based ordinal in ``messages``, adds that message's
    id to the data as ``message_id``) and, by shape, ``messages`` (``[{"role",
    "message_type", "content", "metadata"}]``), ``new_calls`` (``[{"message", "tool_call_id",
    "name", "input", "status", "output", "error"}]``), ``finished_calls`` (``[{"tool_call_id",
    "status", "output", "error"}]``), ``close_error``, ``b_sha256`` and ``b_size``, or
    ``b_status``, ``b_error_code``, ``b_error_message`` and ``b_output``.

    One row: ``fenced`` (the worker owns a live lease: false, nothing written), ``threaded``
    (with messages: the thread is there; false, nothing written), ``ended`` (with ``finishes``:
    the run's row settled)."""
    if shape.snapshot and shape.finishes:
        raise ValueError("a step records a snapshot or an end, not both")
    if shape.new_calls and not shape.messages:
        raise ValueError("a new tool call is on one of the step's messages")
    run_id = bindparam("run_id", type_=String)
    worker_id = bindparam("worker_id", type_=String)
    uid = bindparam("uid", type_=String)
    thread_id = bindparam("thread_id", type_=String)

    fence = (
        select(_RUNS.c.id)
        .where(owned_live_lease(run_id, worker_id))
        .with_for_update(read=True)
        .cte("fence")
    )
    fenced = _exists(fence)
    go: ColumnElement[bool] = fenced
    columns: list[Any] = [fenced.label("fenced")]
    writes: list[CTE] = []

    ids: CTE | None = None
    if shape.messages:
        m = _elements("messages", "m", ordinal=True)
        ids = (
            select(func.nextval(_MESSAGE_IDS).label("id"), m.c.value, m.c.n)
            .select_from(m)
            .where(fenced)
            .cte("ids")
        )
        threads = _THREADS.c
        touched = (
            update(_THREADS)
            .where(threads.thread_id == thread_id, threads.uid == uid, fenced)
            .values(updated_at=func.now())
            .returning(threads.id, threads.uid)
            .cte("touched")
        )
        threaded = _exists(touched)
        go = and_(fenced, threaded)
        columns.append(threaded.label("threaded"))
        value = ids.c.value
        rows = (
            select(
                ids.c.id,
                touched.c.id,
                touched.c.uid,
                _text(value, "role"),
                _text(value, "message_type"),
                _text(value, "content"),
                _json(value, "metadata"),
                run_id,
            )
            .select_from(ids.join(touched, true()))
            .order_by(ids.c.n)
        )
        names = ["id", "conversation_id", "uid", "role", "message_type", "content", "metadata"]
        writes.append(
            insert(_MESSAGES)
            .from_select([*names, "run_id"], rows)
            .returning(_MESSAGES.c.id)
            .cte("added")
        )

    if shape.new_calls:
        assert ids is not None
        c = _elements("new_calls", "c")
        call = c.c.value
        rows = (
            select(
                ids.c.id,
                _text(call, "tool_call_id"),
                _text(call, "name"),
                _json(call, "input"),
                _text(call, "output"),
                _text(call, "status"),
                _text(call, "error"),
            )
            .select_from(c.join(ids, ids.c.n == _text(call, "message").cast(BigInteger)))
            .where(go)
        )
        names = ["message_id", "tool_call_id", "name", "input", "output", "status", "error"]
        writes.append(insert(_CALLS).from_select(names, rows).returning(_CALLS.c.id).cte("calls"))

    finished: CTE | None = None
    if shape.finished_calls:
        f = _elements("finished_calls", "f")
        done = f.c.value
        newest = _CALLS.alias("newest")
        newest_of_id = (
            select(newest.c.id)
            .join(_MESSAGES, _MESSAGES.c.id == newest.c.message_id)
            .join(_THREADS, _THREADS.c.id == _MESSAGES.c.conversation_id)
            .where(
                _THREADS.c.thread_id == thread_id,
                _THREADS.c.uid == uid,
                newest.c.tool_call_id == _text(done, "tool_call_id"),
            )
            .order_by(newest.c.id.desc())
            .limit(1)
            .correlate(f)
            .scalar_subquery()
        )
        finished = (
            update(_CALLS)
            .where(_CALLS.c.id == newest_of_id, go)
            .values(
                output=_text(done, "output"),
                status=_text(done, "status"),
                error=_text(done, "error"),
            )
            .returning(_CALLS.c.id)
            .cte("finished")
        )
        writes.append(finished)

    if shape.closes_calls:
        error = bindparam("close_error", type_=String)
        where = [open_in_thread(uid, thread_id), go]
        if finished is not None:
            where.append(_CALLS.c.id.not_in(select(finished.c.id)))
        writes.append(
            update(_CALLS)
            .where(*where)
            .values(status="error", error=error, output=error)
            .returning(_CALLS.c.id)
            .cte("closed")
        )

    if shape.snapshot or shape.finishes:
        runs = _RUNS.c
        values: dict[str, Any]
        if shape.snapshot:
            values = {
                "memory_snapshot_sha256": bindparam(
                    "b_sha256", type_=runs.memory_snapshot_sha256.type
                ),
                "memory_snapshot_bytes": bindparam("b_size", type_=runs.memory_snapshot_bytes.type),
            }
        else:
            values = {
                "status": bindparam("b_status", type_=runs.status.type),
                "finished_at": func.now(),
                "error_code": bindparam("b_error_code", type_=runs.error_code.type),
                "error_message": bindparam("b_error_message", type_=runs.error_message.type),
                "output": bindparam("b_output", type_=runs.output.type),
                "lease_expires_at": None,
            }
        run = (
            update(_RUNS)
            .where(owned_live_lease(run_id, worker_id), go)
            .values(**values)
            .returning(runs.id)
            .cte("run")
        )
        writes.append(run)
        if shape.finishes:
            columns.append(_exists(run).label("ended"))

    writes.append(_events(run_id, go, ids))
    return PrebuiltStatement(select(*columns).add_cte(*writes))


def _events(run_id: Any, go: ColumnElement[bool], ids: CTE | None) -> CTE:
    """The step's events, in order after the run's last (one read of it, in the statement's
    snapshot: the n-th event gets last + n), each notifying the run's listeners."""
    e = _elements("events", "e", ordinal=True)
    event = e.c.value
    last_seq = (
        select(func.coalesce(func.max(_EVENTS.c.seq), 0))
        .where(_EVENTS.c.run_id == run_id)
        .scalar_subquery()
    )
    data: Any = _json(event, "data")
    source: Any = e
    if ids is not None:
        # An event naming one of the step's messages carries that message's id.
        source = e.outerjoin(ids, ids.c.n == _text(event, "message").cast(BigInteger))
        with_id = data.op("||", return_type=JSONB)(func.jsonb_build_object("message_id", ids.c.id))
        data = case((ids.c.id.is_(None), data), else_=with_id)
    rows = (
        select(run_id, last_seq + e.c.n, _text(event, "type"), data).select_from(source).where(go)
    )
    return (
        insert(_EVENTS)
        .from_select(["run_id", "seq", "event_type", "data"], rows)
        .returning(_EVENTS.c.seq, notify_value(RUN_EVENTS, _EVENTS.c.run_id))
        .cte("events")
    )
