"""Approval decisions: one per interruption, and the truth about it for every tab.

A decision on an interrupted run is a ``resume`` run whose request id the server derives from
the interruption (``resume:<run id>``, a prefix no client may use, design.md §7), so the unique
``(uid, request_id)`` index keeps it to one. Whoever asks again is answered with what was
decided: the same decision gets the run it started (an idempotent retry, or a second tab that
agreed), the other decision is refused with :class:`~yuxi.errors.AlreadyDecided`, whose details
name the decision, its run and that run's status — never "rejected" while the file was written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, cast

from yuxi.db.models import AgentRun
from yuxi.errors import AlreadyDecided, Conflict
from yuxi.services.chat.views import DecisionView, recorded_decision
from yuxi.vocabulary import APPROVAL_DECISIONS

#: The decisions an approval offers.
DECISIONS = APPROVAL_DECISIONS

_PAST = {"approve": "approved", "reject": "rejected"}


def decision_request_id(run_id: str) -> str:
    """The request id of the one decision on the interrupted run ``run_id`` (server-derived:
    its prefix is reserved, so no client id can take it first)."""
    return f"resume:{run_id}"


def decision_of(run: AgentRun, interrupted_run_id: str) -> AgentRun:
    """``run``, if it is a resume run of the interruption ``interrupted_run_id``; a decision
    never answers any other run. Only a client run stored before its prefix was reserved could
    hold the id (migration 0010 moves those out of the server's namespace): fail closed."""
    if run.run_type != "resume" or run.created_by_run_id != interrupted_run_id:
        raise Conflict(
            "this interruption's decision id is held by a run that is not its decision; "
            "it cannot be answered"
        )
    return run


def answer_again(decided: AgentRun, interrupted_run_id: str, decision: object) -> AgentRun:
    """The answer to ``decision`` on an interruption already decided by ``decided``: that run
    when it is the same decision; :class:`AlreadyDecided` (with the decision, its run and the
    run's status) when it is the other one."""
    decision_of(decided, interrupted_run_id)
    prior = recorded_decision(decided)
    if prior == decision:
        return decided
    raise AlreadyDecided(
        f"this action was already {_PAST.get(prior or '', 'decided')}"
        f" (by run {decided.id}); your {decision} was not applied",
        details={
            "decision": prior,
            "decided_by_run_id": decided.id,
            "interrupted_run_id": interrupted_run_id,
            "status": decided.status,
        },
    )


def decision_views(runs: Iterable[AgentRun]) -> list[DecisionView]:
    """The decisions among ``runs`` (resume runs holding their interruption's derived id;
    anything else is left out, as :func:`decision_of` would refuse it), oldest first."""
    views = [
        DecisionView(
            run_id=run.created_by_run_id,
            decision=cast(Literal["approve", "reject"], decision),
            decided_by_run_id=run.id,
            status=run.status,
            decided_at=run.created_at,
        )
        for run in runs
        if run.run_type == "resume"
        and run.created_by_run_id is not None
        and run.request_id == decision_request_id(run.created_by_run_id)
        and (decision := recorded_decision(run)) is not None
    ]
    return sorted(views, key=lambda v: (v.decided_at, v.decided_by_run_id))
