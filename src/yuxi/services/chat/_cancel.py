"""Cancelling a run inside a unit of work: what ``ChatService.cancel`` does to one run, and a
deletion to every active run of its thread."""

from __future__ import annotations

from yuxi.db.models import AgentRun
from yuxi.services.unit_of_work import UnitOfWork

__all__ = ["cancel_in"]


async def cancel_in(uow: UnitOfWork, run: AgentRun) -> None:
    """Cancel ``run`` in ``uow``: a pending run at once, a running one by a cancel request its
    worker hears (and the memory gate refuses any write it still attempts)."""
    if run.status == "pending":
        await uow.runs.cancel_pending(run.id)
        await uow.events.append(run.id, "run_status", {"status": "cancelled"})
    elif run.status == "running":
        await uow.runs.request_cancel(run.uid, run.id)
