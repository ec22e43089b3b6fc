"""Creating runs: a run inserted (``create_run``), a new message's whole submission
(``submit_message``), a run found by its request id (``request_run``, ``get_by_request``): the
first part of :class:`~yuxi.repositories.runs.agent_run_repository.AgentRunRepository`, whose
statements are in :mod:`._submission`."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import String, bindparam, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.db.models import AgentRun
from yuxi.db.prebuilt import PrebuiltStatement
from yuxi.errors import ActiveRunExists, Conflict, NotFound
from yuxi.repositories.message_statements import message_params
from yuxi.repositories.runs._submission import INSERT_RUN, NEW_RUN_FIELDS, SUBMIT_MESSAGE, run_of
from yuxi.vocabulary import CLAIMABLE_RUN_TYPES

__all__ = ["RunCreation"]

_BY_REQUEST = select(AgentRun).where(
    AgentRun.uid == bindparam("uid", type_=String),
    AgentRun.request_id == bindparam("request_id", type_=String),
)


def _new_run(*values: Any) -> dict[str, Any]:
    """The insert's parameters for a new run's ``values``, in :data:`NEW_RUN_FIELDS` order."""
    return {f"v_{name}": value for name, value in zip(NEW_RUN_FIELDS, values, strict=True)}


async def _inserting(statement: PrebuiltStatement, session: AsyncSession, params: Any) -> Any:
    """The row a run's insert returned (None: none written); a second active run of the thread
    (the partial unique index) is :class:`ActiveRunExists`, and a thread whose row is gone by
    the time of the insert (purged since it was read: the run's foreign key) is NotFound."""
    try:
        return await statement.first(session, params)
    except IntegrityError as exc:
        if "uq_agent_runs_one_active_per_thread" in str(exc.orig):
            raise ActiveRunExists("this thread already has an active run") from exc
        if "fk_agent_runs_conversation_thread_id_conversations" in str(exc.orig):
            raise NotFound("thread not found") from exc
        raise


class RunCreation:
    """The run repository's creating part (never commits, as the rest of it)."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def create_run(
        self,
        *,
        uid: str,
        thread_id: str,
        request_id: str,
        run_type: str,
        input_payload: dict[str, Any] | None = None,
        created_by_run_id: str | None = None,
        status: str = "pending",
        unless_awaiting_decision: bool = False,
    ) -> tuple[AgentRun, bool]:
        """Insert a run, idempotent on ``(uid, request_id)``. Returns ``(run, created)``.

        A retried request gets the run it created the first time (if the retry names another
        thread, that is a conflict). A second active run on the same thread is refused by the
        partial unique index and surfaces as :class:`ActiveRunExists`. With
        ``unless_awaiting_decision`` (a new message), a thread whose latest chat/resume run is
        interrupted gets no run (:class:`Conflict`: it waits for an approval decision) — unless
        the request already has its run, which a retry gets back as ever.

        One statement when a run is written (``INSERT … SELECT … WHERE <not awaiting> ON
        CONFLICT DO NOTHING RETURNING``); a second, the read by request id, only when none was.
        No savepoint around it: on :class:`ActiveRunExists` the caller's whole unit of work is
        abandoned (every caller lets the error end its block, which rolls back), so there is no
        later statement of the transaction for a savepoint to save.
        """
        params = _new_run(
            str(uuid.uuid4()),
            uid,
            thread_id,
            request_id,
            run_type,
            status,
            input_payload or {},
            created_by_run_id,
        )
        if unless_awaiting_decision:
            params["thread_id"] = thread_id
        wakes = status == "pending" and run_type in CLAIMABLE_RUN_TYPES
        inserted = await _inserting(
            INSERT_RUN[unless_awaiting_decision, wakes], self.session, params
        )
        if inserted is not None:
            return run_of(inserted), True
        existing = await self.request_run(
            uid, thread_id, request_id, unless_awaiting_decision=unless_awaiting_decision
        )
        return existing, False

    async def submit_message(
        self,
        *,
        uid: str,
        thread_id: str,
        request_id: str,
        input_payload: dict[str, Any],
        content: str,
        title: str,
    ) -> AgentRun | None:
        """A new message's pending chat run on the user's active thread, the message
        ``content`` (an untitled thread titled ``title``) and the run's ``pending`` event, in
        one statement (``SUBMIT_MESSAGE``), which needs no transaction block.

        None: nothing was written — the thread is not the user's, not there or not active, the
        request already has its run, or the thread awaits an approval decision; the caller
        reads which (:meth:`request_run`). A second active run on the thread is
        :class:`ActiveRunExists`, and nothing is written."""
        run_id = str(uuid.uuid4())
        # The run's owner and thread are not parameters: the statement takes them from the
        # thread's row it holds.
        params = _new_run(run_id, None, None, request_id, "chat", "pending", input_payload, None)
        del params["v_uid"], params["v_conversation_thread_id"]
        params.update(
            message_params("user", content, "text", None, None, None, run_id),
            uid=uid,
            run_id=run_id,
            thread_id=thread_id,
            title=title,
            event_type="run_status",
            data={"status": "pending"},
        )
        row = await _inserting(SUBMIT_MESSAGE, self.session, params)
        return None if row is None else run_of(row)

    async def request_run(
        self, uid: str, thread_id: str, request_id: str, *, unless_awaiting_decision: bool
    ) -> AgentRun:
        """Why an insert of a run on ``thread_id`` wrote nothing, the thread being there: the
        request already has its run (a retry: returned), it names another thread (Conflict), or
        (``unless_awaiting_decision``) the thread waits for a decision (Conflict)."""
        existing = await self.get_by_request(uid, request_id)
        if existing is None:
            if unless_awaiting_decision:
                raise Conflict("this thread is waiting for an approval decision")
            raise RuntimeError(f"run of request {request_id!r} neither written nor found")
        if existing.conversation_thread_id != thread_id:
            raise Conflict("request_id was already used for another thread")
        return existing

    async def get_by_request(self, uid: str, request_id: str) -> AgentRun | None:
        params = {"uid": uid, "request_id": request_id}
        return (await self.session.execute(_BY_REQUEST, params)).scalar_one_or_none()
