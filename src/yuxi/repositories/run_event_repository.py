"""Ordered run events (status, model chunks, tool start/end) for live following and replay.

Appends by a worker are fenced by its lease: an event is only written while the appending worker
still owns a live lease on the run, so a worker that lost its lease cannot add to the record.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.expression import bindparam

from yuxi.db.models import RunEvent

_APPEND_FENCED = text(
    """
    INSERT INTO run_events (run_id, seq, event_type, data)
    SELECT CAST(:run_id AS varchar),
           COALESCE((SELECT max(seq) FROM run_events WHERE run_id = CAST(:run_id AS varchar)), 0)
             + 1,
           CAST(:event_type AS varchar), :data
    WHERE EXISTS (
        SELECT 1 FROM agent_runs
        WHERE id = CAST(:run_id AS varchar)
          AND worker_id = CAST(:worker_id AS varchar) AND status = 'running'
          AND lease_expires_at > now()
    )
    RETURNING seq
    """
).bindparams(bindparam("data", type_=JSONB))

_APPEND = text(
    """
    INSERT INTO run_events (run_id, seq, event_type, data)
    SELECT CAST(:run_id AS varchar),
           COALESCE((SELECT max(seq) FROM run_events WHERE run_id = CAST(:run_id AS varchar)), 0)
             + 1,
           CAST(:event_type AS varchar), :data
    RETURNING seq
    """
).bindparams(bindparam("data", type_=JSONB))


class RunEventRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def append_as_owner(
        self, run_id: str, worker_id: str, event_type: str, data: dict[str, Any]
    ) -> int | None:
        """Append while ``worker_id`` holds a live lease. None = the lease is gone."""
        row = await self.session.execute(
            _APPEND_FENCED,
            {"run_id": run_id, "worker_id": worker_id, "event_type": event_type, "data": data},
        )
        return row.scalar_one_or_none()

    async def append(self, run_id: str, event_type: str, data: dict[str, Any]) -> int:
        """Unfenced append, for the service itself (run created, reconciled, SubAgent runs)."""
        row = await self.session.execute(
            _APPEND, {"run_id": run_id, "event_type": event_type, "data": data}
        )
        return int(row.scalar_one())

    async def list_after(self, run_id: str, after_seq: int = 0, limit: int = 500) -> list[RunEvent]:
        rows = await self.session.execute(
            select(RunEvent)
            .where(RunEvent.run_id == run_id, RunEvent.seq > after_seq)
            .order_by(RunEvent.seq)
            .limit(limit)
        )
        return list(rows.scalars())
