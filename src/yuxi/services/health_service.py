"""Readiness and the numbers a metrics scrape reads from the database.

Both answer rather than raise: an API process that cannot reach PostgreSQL is alive but not
ready (``GET /readyz`` says 503), and its metrics still scrape (``yuxi_database_up`` 0).
"""

from __future__ import annotations

import asyncio
import logging

from yuxi.limits import READINESS_TIMEOUT_SECONDS
from yuxi.services.unit_of_work import UnitOfWorkFactory

__all__ = ["HealthService"]

_log = logging.getLogger(__name__)


class HealthService:
    def __init__(
        self, uow: UnitOfWorkFactory, *, timeout_seconds: float = READINESS_TIMEOUT_SECONDS
    ) -> None:
        self._uow = uow
        self._timeout = timeout_seconds

    async def database_ready(self) -> bool:
        """True when the database answers ``SELECT 1`` within the readiness timeout."""
        try:
            async with asyncio.timeout(self._timeout), self._uow() as uow:
                await uow.health.ping()
        except Exception as exc:  # any failure to answer means "not ready", never an error page
            _log.warning("database not ready: %s", type(exc).__name__)
            return False
        return True

    async def run_counts(self) -> dict[str, int] | None:
        """Runs by status, cluster-wide; ``None`` when the database does not answer in time."""
        try:
            async with asyncio.timeout(self._timeout), self._uow() as uow:
                return await uow.health.run_counts()
        except Exception as exc:
            _log.warning("run counts unavailable: %s", type(exc).__name__)
            return None
