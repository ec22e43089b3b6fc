"""What operations ask of the database: does it answer, and how many runs are in each status."""

from __future__ import annotations

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.db.models import AgentRun


class HealthRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def ping(self) -> None:
        """Raises unless the server answers a trivial query."""
        await self._session.execute(text("SELECT 1"))

    async def run_counts(self) -> dict[str, int]:
        """Every run (top-level and SubAgent) counted by status; a status with none is absent."""
        rows = await self._session.execute(
            select(AgentRun.status, func.count()).group_by(AgentRun.status)
        )
        return {status: int(count) for status, count in rows.all()}
