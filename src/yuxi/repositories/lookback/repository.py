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

from yuxi import limits
from yuxi.errors import InvalidArgument, NotFound
from yuxi.limits import SEARCH_MAX_PHRASES, SEARCH_MAX_TERMS
from yuxi.repositories.lookback import _params as p
from yuxi.repositories.lookback import _query as query_sql
from yuxi.repositories.lookback import _ranking as ranking
from yuxi.repositories.lookback import _reads as reads
from yuxi.repositories.lookback import _sample as sample
from yuxi.repositories.lookback import _search as search
from yuxi.repositories.lookback import _threads as listing
from yuxi.repositories.lookback._ranking import Neighbour, SearchHit, SearchHits, SearchRequest
from yuxi.repositories.lookback.visibility import NOT_VISIBLE

__all__ = ["LookbackRepository", "ThreadRead"]


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


def _neighbour(row: Any, side: str) -> Neighbour | None:
    role = getattr(row, f"{side}_role")
    if role is None:
        return None
    return Neighbour(
        int(getattr(row, f"{side}_id")),
        role,
        getattr(row, f"{side}_content") or "",
        bool(getattr(row, f"{side}_more")),
    )


class LookbackRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def search_messages(self, request: SearchRequest) -> SearchHits:
        """The caller's visible messages (none of the searching run's chain) that hold a term
        of the query, best first by BM25 (ties: newest first), each with its neighbours
        (design.md §6.2). ``request`` was validated by the service; this checks only what needs
        the database: the query's and phrases' terms, and the thread filter (else
        ``NotFound``). The ToolCall table is never touched."""
        session = self.session
        uid, run = request.uid, request.current_run_id
        owner = {"owner_view": request.owner_view}
        free_text, phrases = query_sql.split_phrases(request.query)
        if len(phrases) > SEARCH_MAX_PHRASES:
            raise InvalidArgument(f"at most {SEARCH_MAX_PHRASES} quoted phrases")
        await session.execute(p.PLAN_WITH_PARAMETERS)
        rows = (await session.execute(*query_sql.terms_statement([free_text, *phrases]))).all()
        free_terms, *phrase_terms = [list(row[1] or ()) for row in rows]
        if any(not terms for terms in phrase_terms):
            raise InvalidArgument("a quoted phrase must hold a letter or digit")
        terms = list(dict.fromkeys([t for ts in phrase_terms for t in ts] + free_terms))
        if not terms:
            raise InvalidArgument("the query must hold a word: letters or digits")
        used, left_out = terms[:SEARCH_MAX_TERMS], terms[SEARCH_MAX_TERMS:]
        conversation_id: int | None = None
        if request.thread_id is not None:
            found = await session.execute(
                *query_sql.thread_filter_statement(uid, request.thread_id)
            )
            conversation_id = found.scalar_one_or_none()
            if conversation_id is None:
                raise NotFound(NOT_VISIBLE)
        corpus, values = search.corpus_statement(uid, run)
        docs, total = (await session.execute(corpus, {**values, **owner})).one()
        docs, total = int(docs), int(total)
        ranking_args: dict[str, Any] = {
            "phrases": list(zip(phrase_terms, phrases, strict=True)),
            "limit": request.limit,
            "current_run_id": run,
            "conversation_id": conversation_id,
            "after": request.after,
            "before": request.before,
            "docs": docs,
            "avgdl": total / docs if docs else 1.0,
        }
        searched: int | None = None
        if docs > limits.SEARCH_FULL_CORPUS_MESSAGES:
            rank, values = sample.sampled_rank_statement(
                uid,
                used,
                cap=limits.SEARCH_TERM_HOLDERS // len(used),
                window=limits.SEARCH_WINDOW_MESSAGES,
                **ranking_args,
            )
            ranked = (await session.execute(rank, {**values, **owner})).all()
            if ranked and ranked[0].windowed:
                searched = int(ranked[0].docs)
            ranked = [row for row in ranked if row.message_id is not None]
        else:
            rank, values = search.rank_statement(uid, used, **ranking_args)
            ranked = (await session.execute(rank, {**values, **owner})).all()
        shown: dict[int, Any] = {}
        if ranked:  # (a miss asks nothing more)
            details, values = query_sql.details_statement(
                uid, [int(r.message_id) for r in ranked], run
            )
            found_rows = await session.execute(details, {**values, **owner})
            shown = {int(row.message_id): row for row in found_rows}
        hits: list[SearchHit] = []
        for row in ranked:
            detail = shown.get(int(row.message_id))
            if detail is None:  # hidden between the two statements: never shown
                continue
            match = phrases[0] if phrases else ranking.best_term(row, used)
            hits.append(
                SearchHit(
                    detail,
                    float(row.score),
                    match,
                    before=_neighbour(detail, "before"),
                    after=_neighbour(detail, "after"),
                )
            )
        return SearchHits(hits, searched_messages=searched, left_out_terms=left_out)

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
        Arguments were validated by the service.
        """
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

    async def list_threads(
        self, uid: str, *, before: datetime | None, limit: int, except_thread: str | None = None
    ) -> list[Any]:
        """Up to ``limit + 1`` of the caller's visible threads that hold a visible message,
        newest last message first: rows ``(thread_id, title, created_at, last_at,
        message_count, first_text)``. ``before`` (aware) keeps only threads whose last visible
        message is strictly earlier; ``except_thread`` (the asking run's thread) is left out.
        One statement (:mod:`._threads`). Arguments were validated by the service."""
        await self.session.execute(p.PLAN_WITH_PARAMETERS)
        statement = listing.threads_statement(
            uid, before=before, limit=limit, except_thread=except_thread
        )
        return list((await self.session.execute(*statement)).all())
