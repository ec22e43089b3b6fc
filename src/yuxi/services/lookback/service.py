"""History lookback: the three bounded tools over the user's own ordinary past conversations.

Owner of ``search_thread_messages``, ``read_thread_messages`` and ``list_threads`` (design.md §6)
on the service side: argument validation, the memory switch, the transaction, and shaping the
rows into the budgeted tool responses (:mod:`._shape`). Visibility and the field allowlist live
in :mod:`yuxi.repositories.lookback`.

Each coroutine returns a :class:`LookbackResult` (the budgeted response) or raises a
:class:`~yuxi.errors.YuxiError`: the tool adapter tells the model, the run goes on.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from yuxi.errors import InvalidArgument, MemoryDisabled, StorageUnavailable, UnauthorizedRun
from yuxi.limits import (
    LIST_THREADS_DEFAULT_ITEMS,
    LIST_THREADS_MAX_ITEMS,
    READ_MAX_MESSAGES,
    SEARCH_MAX_ITEMS,
    SEARCH_QUERY_MAX_CHARS,
    THREAD_ID_MAX_CHARS,
)
from yuxi.observability.metrics import Metrics
from yuxi.repositories.lookback import SearchRequest
from yuxi.services.lookback import _shape as shape
from yuxi.services.lookback._time import parse_time
from yuxi.services.unit_of_work import UnitOfWork, UnitOfWorkFactory
from yuxi.utils.string_utils import check_text, is_valid_text

__all__ = ["LookbackResult", "LookbackService"]

_log = logging.getLogger(__name__)

_MAX_MESSAGE_ID = 2**63 - 1
#: The longest digit string accepted for an integer argument (so int() stays cheap).
_MAX_DIGITS = 19


@dataclass(frozen=True)
class LookbackResult:
    """One budgeted history response, as :mod:`._shape` built (and measured) it."""

    body: Mapping[str, Any]

    def to_payload(self) -> dict[str, Any]:
        return dict(self.body)


def _int_arg(value: object, name: str, low: int, high: int) -> int:
    """A model-supplied integer in ``low..high``; a digit string is accepted, a bool is not."""
    if isinstance(value, bool) or not isinstance(value, int):
        text = value.strip() if isinstance(value, str) else ""
        if not (text.isascii() and text.isdigit() and len(text) <= _MAX_DIGITS):
            raise InvalidArgument(f"{name} must be an integer {low}..{high}")
        value = int(text)
    if not low <= value <= high:
        raise InvalidArgument(f"{name} must be between {low} and {high}")
    return value


def _thread_arg(value: object) -> str:
    """A thread id from an earlier result: non-blank text of at most 64 characters, stripped."""
    if (
        not isinstance(value, str)
        or not value.strip()
        or len(value) > THREAD_ID_MAX_CHARS
        or not is_valid_text(value)
    ):
        raise InvalidArgument("thread_id must be a thread id from an earlier result")
    return value.strip()


def _check_uid(uid: object) -> str:
    if not isinstance(uid, str) or not uid or not is_valid_text(uid):
        raise UnauthorizedRun("no trusted user identity")
    return uid


def _search_request(
    uid: str,
    query: object,
    limit: object,
    *,
    after: object = None,
    before: object = None,
    thread_id: object = None,
    current_run_id: str | None = None,
    owner_view: bool = False,
) -> SearchRequest:
    """Every argument of a search, checked here and nowhere else (design.md §6.2); the
    identity first, so a call without a trusted user is refused as such whatever else it says."""
    uid = _check_uid(uid)
    start = parse_time("after", after)
    end = parse_time("before", before)
    if start is not None and end is not None and start >= end:
        raise InvalidArgument("after must be earlier than before")
    return SearchRequest(
        uid=uid,
        query=check_text("query", query, max_chars=SEARCH_QUERY_MAX_CHARS, strip=True),
        limit=_int_arg(limit, "limit", 1, SEARCH_MAX_ITEMS),
        after=start,
        before=end,
        thread_id=None if thread_id is None else _thread_arg(thread_id),
        current_run_id=current_run_id,
        owner_view=owner_view,
    )


class LookbackService:
    def __init__(self, uow: UnitOfWorkFactory, *, metrics: Metrics | None = None) -> None:
        self._uow = uow
        self._metrics = metrics or Metrics()

    async def search_thread_messages(
        self,
        *,
        uid: str,
        query: object,
        limit: object = 5,
        after: object = None,
        before: object = None,
        thread_id: object = None,
        current_run_id: str | None = None,
    ) -> LookbackResult:
        """Ranked search (design.md §6.2). ``after`` (inclusive) / ``before`` (exclusive): ISO
        8601 dates or datetimes bounding the message's time; ``thread_id``: one visible thread.
        ``current_run_id``: the searching run, whose own messages (the question that asked for
        this search) are left out of the results."""
        started = time.perf_counter()
        try:
            request = _search_request(
                uid,
                query,
                limit,
                after=after,
                before=before,
                thread_id=thread_id,
                current_run_id=current_run_id,
            )
            return await self._search(request, memory_required=True)
        finally:
            self._metrics.history_call("search_thread_messages", time.perf_counter() - started)

    async def search_own_messages(
        self, *, uid: str, query: object, limit: object = SEARCH_MAX_ITEMS
    ) -> LookbackResult:
        """The owner's own search over their thread list (the UI's search box): the same terms,
        ranking, neighbours and budgets as :meth:`search_thread_messages`, over every active
        ordinary thread of the owner, those hidden from recall included. It is the owner reading
        their own data, so it does not depend on the memory switch."""
        request = _search_request(uid, query, limit, owner_view=True)
        return await self._search(request, memory_required=False)

    async def read_thread_messages(
        self,
        *,
        uid: str,
        thread_id: object,
        message_id: object = None,
        limit: object = 20,
        include_tools: object = False,
    ) -> LookbackResult:
        started = time.perf_counter()
        try:
            _check_uid(uid)
            thread = _thread_arg(thread_id)
            anchor = (
                None
                if message_id is None
                else _int_arg(message_id, "message_id", 1, _MAX_MESSAGE_ID)
            )
            n = _int_arg(limit, "limit", 1, READ_MAX_MESSAGES)
            if not isinstance(include_tools, bool):
                raise InvalidArgument("include_tools must be true or false")
            async with self._reading(uid, "read_thread_messages") as uow:
                read = await uow.lookback.read_messages(
                    uid, thread, message_id=anchor, limit=n, include_tools=include_tools
                )
            return LookbackResult(shape.read_response(read))
        finally:
            self._metrics.history_call("read_thread_messages", time.perf_counter() - started)

    async def list_threads(
        self,
        *,
        uid: str,
        before: object = None,
        limit: object = LIST_THREADS_DEFAULT_ITEMS,
        current_thread_id: str | None = None,
    ) -> LookbackResult:
        """The caller's visible threads, newest last message first (design.md §6.5): at most
        ``limit`` (1-20), optionally only those whose last visible message is strictly before
        ``before`` (an ISO 8601 date, its midnight UTC, or datetime; without an offset UTC).
        ``current_thread_id``: the asking run's thread, left out (the model is in it)."""
        started = time.perf_counter()
        try:
            _check_uid(uid)
            moment = parse_time("before", before)
            n = _int_arg(limit, "limit", 1, LIST_THREADS_MAX_ITEMS)
            async with self._reading(uid, "list_threads") as uow:
                rows = await uow.lookback.list_threads(
                    uid, before=moment, limit=n, except_thread=current_thread_id
                )
            return LookbackResult(shape.threads_response(rows, limit=n))
        finally:
            self._metrics.history_call("list_threads", time.perf_counter() - started)

    async def _search(self, request: SearchRequest, *, memory_required: bool) -> LookbackResult:
        async with self._reading(
            request.uid, "search_thread_messages", memory_required=memory_required
        ) as uow:
            found = await uow.lookback.search_messages(request)
        return LookbackResult(shape.search_response(found))

    @contextlib.asynccontextmanager
    async def _reading(
        self, uid: str, tool: str, *, memory_required: bool = True
    ) -> AsyncIterator[UnitOfWork]:
        """One read-only transaction of a history call: the memory switch checked in it (the
        model's tools belong to memory), a database failure as ``storage_unavailable``."""
        try:
            async with self._uow() as uow:
                if memory_required and not await uow.users.memory_enabled(uid):
                    raise MemoryDisabled("memory is turned off for this user")
                yield uow
        except SQLAlchemyError as exc:
            _log.warning("%s failed: %r", tool, exc)
            raise StorageUnavailable("history is unavailable right now") from None
