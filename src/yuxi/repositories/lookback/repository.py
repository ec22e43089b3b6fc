"""The model's lookback into the caller's own past threads: search, read, list.

Owner (design.md §2, §6) of history visibility inside every statement and of the field
allowlist (explicit columns only; the ToolCall table is read only when a read asks for tool
calls). It returns rows; the byte budgets, framing and truncation flags of the tool responses
are the service's (:mod:`yuxi.services.lookback`). The SQL lives in the package's private
modules: :mod:`._search` and :mod:`._sample` (the ranked search, driven by :mod:`._ranking`),
:mod:`._reads` and :mod:`._threads`.

Never commits: the service or test that calls it owns the transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from yuxi.errors import NotFound
from yuxi.limits import READ_MAX_MESSAGES, THREAD_ID_MAX_CHARS
from yuxi.repositories.lookback import _params as p
from yuxi.repositories.lookback import _ranking as ranking
from yuxi.repositories.lookback import _reads as reads
from yuxi.repositories.lookback import _threads as listing
from yuxi.repositories.lookback._ranking import SearchHits
from yuxi.repositories.visibility import NOT_VISIBLE
from yuxi.utils.string_utils import is_valid_text

__all__ = ["LookbackRepository", "ThreadRead"]

_BIGINT_MAX = 2**63 - 1


@dataclass(frozen=True)
class ThreadRead:
    """One visible thread's window: ``rows`` ``(id, role, content prefix)`` chronological,
    ``anchor`` the index of the asked-for message (``None``: the latest were read), and
    ``tool_rows`` newest first (``None`` when tool calls were not asked for)."""

    thread_id: str
    title: str
    rows: list[Any]
    anchor: int | None
    tool_rows: Sequence[Any] | None


class LookbackRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def search_messages(
        self,
        uid: str,
        query: str,
        limit: int,
        *,
        current_run_id: str | None = None,
        after: datetime | None = None,
        before: datetime | None = None,
        thread_id: str | None = None,
    ) -> SearchHits:
        """The caller's visible messages holding a term of ``query``, best first by BM25: see
        :func:`._ranking.search_messages`."""
        return await ranking.search_messages(
            self.session,
            uid,
            query,
            limit,
            current_run_id=current_run_id,
            after=after,
            before=before,
            thread_id=thread_id,
        )

    async def read_messages(
        self,
        uid: str,
        thread_id: str,
        *,
        message_id: int | None,
        limit: int,
        include_tools: bool,
    ) -> ThreadRead:
        """Up to 20 visible messages of one visible thread, chronological.

        Without ``message_id``: the latest ``limit``. With it: a window around that message
        that always contains it. Every unreadable case raises ``NotFound(NOT_VISIBLE)``.
        """
        if (
            not isinstance(thread_id, str)
            or not thread_id
            or len(thread_id) > THREAD_ID_MAX_CHARS
            or not is_valid_text(thread_id)
        ):
            raise NotFound(NOT_VISIBLE)
        if message_id is not None and (
            isinstance(message_id, bool)
            or not isinstance(message_id, int)
            or not 1 <= message_id <= _BIGINT_MAX
        ):
            raise NotFound(NOT_VISIBLE)
        limit = max(1, min(int(limit), READ_MAX_MESSAGES))
        await self.session.execute(p.PLAN_WITH_PARAMETERS)
        thread = (await self.session.execute(*reads.thread_statement(uid, thread_id))).one_or_none()
        if thread is None:
            raise NotFound(NOT_VISIBLE)
        conversation_id = int(thread.id)
        rows, anchor = await self._message_window(uid, conversation_id, message_id, limit)
        tool_rows: Sequence[Any] | None = None
        if include_tools:  # the ToolCall table is queried only here
            found = await self.session.execute(*reads.tool_calls_statement(uid, conversation_id))
            tool_rows = found.all()
        return ThreadRead(thread.thread_id, thread.title or "", rows, anchor, tool_rows)

    async def _message_window(
        self, uid: str, conversation_id: int, anchor_id: int | None, limit: int
    ) -> tuple[list[Any], int | None]:
        """Rows ``(id, role, content prefix)`` in chronological order, and the anchor's index."""
        if anchor_id is None:
            latest = await self.session.execute(
                *reads.thread_window("latest", uid, conversation_id, limit=limit)
            )
            return list(reversed(latest.all())), None
        anchor = (
            await self.session.execute(
                *reads.thread_window("anchor", uid, conversation_id, anchor_id=anchor_id)
            )
        ).one_or_none()
        if anchor is None:
            raise NotFound(NOT_VISIBLE)
        side = limit - 1
        before = (
            await self.session.execute(
                *reads.thread_window(
                    "before", uid, conversation_id, anchor_id=anchor_id, limit=side
                )
            )
        ).all()
        after = (
            await self.session.execute(
                *reads.thread_window("after", uid, conversation_id, anchor_id=anchor_id, limit=side)
            )
        ).all()
        want_before = side // 2
        want_after = side - want_before
        if len(before) < want_before:
            want_after = side - len(before)
        elif len(after) < want_after:
            want_before = side - len(after)
        older = list(reversed(before[:want_before]))
        return [*older, anchor, *after[:want_after]], len(older)

    async def list_threads(self, uid: str, *, before: datetime | None, limit: int) -> list[Any]:
        """Up to ``limit + 1`` of the caller's visible threads that hold a visible message,
        newest last message first: rows ``(thread_id, title, created_at, last_at,
        message_count, first_text)``. ``before`` (aware) keeps only threads whose last visible
        message is strictly earlier. One statement (:mod:`._threads`)."""
        limit = listing.clamp_limit(limit)
        await self.session.execute(p.PLAN_WITH_PARAMETERS)
        statement = listing.threads_statement(uid, before=before, limit=limit)
        return list((await self.session.execute(*statement)).all())
