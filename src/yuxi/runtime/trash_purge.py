"""The purge job: the worker pool's pass over the trash (design.md §12.3).

Every ``interval`` seconds (``TRASH_PURGE_INTERVAL_SECONDS``; at once when the pool starts) it
purges every deleted thread whose ``YUXI_TRASH_DAYS`` are over (:meth:`ThreadTrash.purge_due`:
bounded batches, lease-safe, idempotent, ``FOR UPDATE SKIP LOCKED``, so every worker process
may run it at the same time). A failed pass is logged and tried again at the next one: it rolled
back whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from yuxi.services.chat import PurgeReport, ThreadTrash

__all__ = ["purge_trash_periodically"]

_log = logging.getLogger(__name__)


async def purge_trash_periodically(
    trash: ThreadTrash, stop: asyncio.Event, *, interval: float
) -> list[PurgeReport]:
    """Purge what is due until ``stop`` is set; the reports of the passes that purged
    something (for tests and logs)."""
    reports: list[PurgeReport] = []
    while not stop.is_set():
        try:
            report = await trash.purge_due()
        except asyncio.CancelledError:
            raise
        except Exception:
            _log.warning("purging the trash failed; trying again at the next pass", exc_info=True)
        else:
            if report.threads:
                reports.append(report)
                _log.info(
                    "purged %d deleted thread(s) from the trash: %s",
                    len(report.threads),
                    ", ".join(report.threads),
                )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)
    return reports
