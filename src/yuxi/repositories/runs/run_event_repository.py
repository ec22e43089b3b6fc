"""Ordered run events (status, model chunks, tool start/end) for live following and replay.

A worker's events are written with the rest of its step, fenced by its lease, in the step's
one statement (:mod:`._step`): a worker that lost its lease cannot add to the record. The
appends here are the service's own, unfenced (a run created, reconciled, a SubAgent's run).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, cast

from sqlalchemy import (
    ColumnElement,
    Insert,
    Integer,
    String,
    Table,
    and_,
    bindparam,
    func,
    insert,
    literal_column,
    select,
    true,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.db.models import AgentRun, ApiToken, RunEvent
from yuxi.db.notifications import RUN_EVENTS
from yuxi.db.prebuilt import PrebuiltStatement
from yuxi.repositories.notify import notify_value
from yuxi.repositories.token_repository import token_is_valid


def append_insert(*, only_if: ColumnElement[bool] | None = None) -> Insert:
    """``INSERT INTO run_events … SELECT <next seq> [WHERE only_if] RETURNING seq,
    pg_notify(…)``, with the run, type and data as parameters. ``only_if``: a condition the
    append also needs (a statement that appends the event only when another of its steps wrote
    a row)."""
    run_id = bindparam("run_id", type_=String)
    next_seq = (
        select(func.coalesce(func.max(RunEvent.seq), 0) + 1)
        .where(RunEvent.run_id == run_id)
        .scalar_subquery()
    )
    row = select(
        run_id,
        next_seq,
        bindparam("event_type", type_=String),
        bindparam("data", type_=JSONB),
    )
    if only_if is not None:
        row = row.where(only_if)
    # The listeners (event streams, waiting requests) hear of the event when it commits. On the
    # table, not the ORM entity: the session passes the parameters to the statement as they are
    # (an ORM insert would take them for rows to insert in bulk).
    table = cast(Table, RunEvent.__table__)
    return (
        insert(table)
        .from_select(["run_id", "seq", "event_type", "data"], row)
        .returning(table.c.seq, notify_value(RUN_EVENTS, table.c.run_id))
    )


#: :func:`append_insert`, built once and run prebuilt (:mod:`yuxi.db.prebuilt`).
_APPEND = PrebuiltStatement(append_insert())


class StreamedEvent(NamedTuple):
    """One event of a run as its stream sends it."""

    seq: int
    event_type: str
    data: Any


class OwnedPage(NamedTuple):
    """A page of a run's events with the run's status (:meth:`RunEventRepository.owned_page`)."""

    status: str
    events: list[StreamedEvent]
    #: Seconds the given token has left (``inf``: no expiry); None: it does not authenticate
    #: the run's owner (or no token was given).
    token_left: float | None


def _events_after(runs: Any) -> Any:
    """The events of the run ``runs.id`` after ``:after`` (at most ``:limit``, in order), as a
    lateral subquery ``e``."""
    events = cast(Table, RunEvent.__table__).c
    return (
        select(events.seq, events.event_type, events.data)
        .where(events.run_id == runs.id, events.seq > bindparam("after", type_=Integer))
        .order_by(events.seq)
        .limit(bindparam("limit", type_=Integer))
        .lateral("e")
    )


#: The seconds a token row has left by the database clock (``Infinity``: no expiry).
_SECONDS_LEFT = func.coalesce(
    func.extract("epoch", ApiToken.expires_at - func.now()),
    literal_column("'Infinity'::numeric"),
)


def _page_statement() -> PrebuiltStatement:
    """The run's status if ``uid`` owns it, with its events after ``after`` (at most ``limit``,
    in order) and the standing of the stream's token, in one statement — so in one snapshot::

        SELECT r.status, e.seq, e.event_type, e.data, (<token left>) FROM agent_runs r
        LEFT JOIN LATERAL (SELECT … FROM run_events WHERE run_id = r.id AND seq > :after
                           ORDER BY seq LIMIT :limit) e ON true
        WHERE r.id = :run_id AND r.uid = :uid ORDER BY e.seq

    No row: not the user's run (or gone). One row with no event: nothing after ``after``.
    ``token_left``: the seconds the token hashed ``token_hash`` has left by the database clock
    (``Infinity``: no expiry) if it still authenticates ``uid``; NULL if it does not (revoked,
    expired, another user's, or no token given)."""
    runs = cast(Table, AgentRun.__table__).c
    after = _events_after(runs)
    token_left = (
        select(_SECONDS_LEFT)
        .where(
            ApiToken.token_hash == bindparam("token_hash", type_=String),
            ApiToken.uid == runs.uid,
            token_is_valid(),
        )
        .scalar_subquery()
        .label("token_left")
    )
    return PrebuiltStatement(
        select(runs.status, after.c.seq, after.c.event_type, after.c.data, token_left)
        .select_from(cast(Table, AgentRun.__table__).outerjoin(after, true()))
        .where(
            runs.id == bindparam("run_id", type_=String), runs.uid == bindparam("uid", type_=String)
        )
        .order_by(after.c.seq)
    )


def _opening_statement() -> PrebuiltStatement:
    """An event stream's first page, named by its token: the token's owner (if the token is
    valid) and the seconds it has left, that user's run ``run_id`` — its status, its events
    after ``after`` — in one statement::

        SELECT t.uid, <seconds left>, r.status, e.seq, e.event_type, e.data FROM api_tokens t
        LEFT JOIN agent_runs r ON r.id = :run_id AND r.uid = t.uid
        LEFT JOIN LATERAL (<the run's events after :after>) e ON true
        WHERE t.token_hash = :token_hash AND <valid> ORDER BY e.seq

    No row: the token does not authenticate anybody (unknown, revoked or expired). Rows with
    no status: the user has no such run."""
    tokens = cast(Table, ApiToken.__table__)
    run_table = cast(Table, AgentRun.__table__)
    runs = run_table.c
    after = _events_after(runs)
    owned = and_(runs.id == bindparam("run_id", type_=String), runs.uid == tokens.c.uid)
    return PrebuiltStatement(
        select(
            tokens.c.uid,
            _SECONDS_LEFT.label("token_left"),
            runs.status,
            after.c.seq,
            after.c.event_type,
            after.c.data,
        )
        .select_from(tokens.outerjoin(run_table, owned).outerjoin(after, true()))
        .where(tokens.c.token_hash == bindparam("token_hash", type_=String), token_is_valid())
        .order_by(after.c.seq)
    )


_PAGE = _page_statement()
_OPENING = _opening_statement()


class OpeningPage(NamedTuple):
    """An event stream's first page (:meth:`RunEventRepository.opening_page`)."""

    #: The token's owner.
    uid: str
    #: The run's page, as :meth:`RunEventRepository.owned_page` reads it (None: the user has no
    #: such run).
    page: OwnedPage | None


def _events_of(rows: Sequence[Any]) -> list[StreamedEvent]:
    """A page's events from its rows (a row without one: the run has none after ``after``)."""
    return [StreamedEvent(r.seq, r.event_type, r.data) for r in rows if r.seq is not None]


class RunEventRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def append(self, run_id: str, event_type: str, data: dict[str, Any]) -> int:
        """Unfenced append, for the service itself (run created, reconciled, SubAgent runs)."""
        params = {"run_id": run_id, "event_type": event_type, "data": data}
        return int((await _APPEND.one(self.session, params)).seq)

    async def owned_page(
        self, uid: str, run_id: str, after_seq: int, limit: int, *, token_hash: str | None = None
    ) -> OwnedPage | None:
        """The run's status and its events after ``after_seq`` (at most ``limit``), read
        together in one statement: a settled status means every event of the run is among
        those read (a run settles in the transaction that records its last event); with
        ``token_hash``, whether that token still authenticates ``uid`` and for how long, read in
        the same statement. None: not ``uid``'s run, or gone."""
        params = {
            "uid": uid,
            "run_id": run_id,
            "after": after_seq,
            "limit": limit,
            "token_hash": token_hash,
        }
        rows = await _PAGE.all(self.session, params)
        if not rows:
            return None
        events = _events_of(rows)
        left = rows[0].token_left
        return OwnedPage(rows[0].status, events, None if left is None else float(left))

    async def opening_page(
        self, token_hash: str, run_id: str, after_seq: int, limit: int
    ) -> OpeningPage | None:
        """The first page of an event stream named by its token alone: who the token
        authenticates and that user's run ``run_id`` as :meth:`owned_page` reads it, in one
        statement. None: the token authenticates nobody."""
        params = {"token_hash": token_hash, "run_id": run_id, "after": after_seq, "limit": limit}
        rows = await _OPENING.all(self.session, params)
        if not rows:
            return None
        first = rows[0]
        if first.status is None:
            return OpeningPage(first.uid, None)
        events = _events_of(rows)
        return OpeningPage(first.uid, OwnedPage(first.status, events, float(first.token_left)))

    async def latest_seqs(self, run_ids: Sequence[str]) -> dict[str, int]:
        """The last event seq of each run in ``run_ids`` that has events (one statement)."""
        rows = await self.session.execute(
            select(RunEvent.run_id, func.max(RunEvent.seq))
            .where(RunEvent.run_id.in_(list(run_ids)))
            .group_by(RunEvent.run_id)
        )
        return {run_id: int(seq) for run_id, seq in rows}
