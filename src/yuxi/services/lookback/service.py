"""History lookback: the three bounded tools over the user's own ordinary past conversations.

Owner of ``search_thread_messages``, ``read_thread_messages`` and ``list_threads`` (design.md §6)
on the service side: argument validation, the memory switch, the transaction, and shaping the
rows into the budgeted tool responses (:mod:`._shape`). Visibility and the field allowlist live
in :mod:`yuxi.repositories.lookback`.

Each coroutine returns a :class:`LookbackResult` (the budgeted response) or raises a
:class:`~yuxi.errors.YuxiError`: the tool adapter tells the model, the run goes on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
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
    if not isinstance(value, str) or not value.strip() or len(value) > THREAD_ID_MAX_CHARS:
        raise InvalidArgument("thread_id must be a thread id from an earlier result")
    return value.strip()


def _check_uid(uid: object) -> str:
    if not isinstance(uid, str) or not uid or not is_valid_text(uid):
        raise UnauthorizedRun("no trusted user identity")
    return uid


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
            return await self._search(uid, query, limit, after, before, thread_id, current_run_id)
        finally:
            self._metrics.history_call("search_thread_messages", time.perf_counter() - started)

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
            return await self._read(uid, thread_id, message_id, limit, include_tools)
        finally:
            self._metrics.history_call("read_thread_messages", time.perf_counter() - started)

    async def _search(
        self,
        uid: str,
        query: object,
        limit: object,
        after: object,
        before: object,
        thread_id: object,
        current_run_id: str | None,
    ) -> LookbackResult:
        _check_uid(uid)
        q = check_text("query", query, max_chars=SEARCH_QUERY_MAX_CHARS, strip=True)
        n = _int_arg(limit, "limit", 1, SEARCH_MAX_ITEMS)
        start = parse_time("after", after)
        end = parse_time("before", before)
        if start is not None and end is not None and start >= end:
            raise InvalidArgument("after must be earlier than before")
        thread = None if thread_id is None else _thread_arg(thread_id)
        try:
            async with self._uow() as uow:
                await _require_memory(uow, uid)
                found = await uow.lookback.search_messages(
                    uid,
                    q,
                    n,
                    current_run_id=current_run_id,
                    after=start,
                    before=end,
                    thread_id=thread,
                )
            return LookbackResult(shape.search_response(found))
        except SQLAlchemyError as exc:
            _log.warning("search_thread_messages failed: %r", exc)
            raise StorageUnavailable("history is unavailable right now") from None

    async def _read(
        self,
        uid: str,
        thread_id: object,
        message_id: object,
        limit: object,
        include_tools: object,
    ) -> LookbackResult:
        _check_uid(uid)
        if (
            not isinstance(thread_id, str)
            or not thread_id.strip()
            or len(thread_id) > THREAD_ID_MAX_CHARS
        ):
            raise InvalidArgument("thread_id must be a non-empty thread id")
        anchor = (
            None if message_id is None else _int_arg(message_id, "message_id", 1, _MAX_MESSAGE_ID)
        )
        n = _int_arg(limit, "limit", 1, READ_MAX_MESSAGES)
        if not isinstance(include_tools, bool):
            raise InvalidArgument("include_tools must be true or false")
        try:
            async with self._uow() as uow:
                await _require_memory(uow, uid)
                read = await uow.lookback.read_messages(
                    uid, thread_id.strip(), message_id=anchor, limit=n, include_tools=include_tools
                )
            return LookbackResult(shape.read_response(read))
        except SQLAlchemyError as exc:
            _log.warning("read_thread_messages failed: %r", exc)
            raise StorageUnavailable("history is unavailable right now") from None

    async def list_threads(
        self, *, uid: str, before: object = None, limit: object = LIST_THREADS_DEFAULT_ITEMS
    ) -> LookbackResult:
        """The caller's visible threads, newest last message first (design.md §6.5): at most
        ``limit`` (1-20), optionally only those whose last visible message is strictly before
        ``before`` (an ISO 8601 date, its midnight UTC, or datetime; without an offset UTC)."""
        started = time.perf_counter()
        try:
            _check_uid(uid)
            moment = parse_time("before", before)
            n = _int_arg(limit, "limit", 1, LIST_THREADS_MAX_ITEMS)
            try:
                async with self._uow() as uow:
                    await _require_memory(uow, uid)
                    rows = await uow.lookback.list_threads(uid, before=moment, limit=n)
                return LookbackResult(shape.threads_response(rows, limit=n))
            except SQLAlchemyError as exc:
                _log.warning("list_threads failed: %r", exc)
                raise StorageUnavailable("history is unavailable right now") from None
        finally:
            self._metrics.history_call("list_threads", time.perf_counter() - started)


async def _require_memory(uow: UnitOfWork, uid: str) -> None:
    """History lookback belongs to memory: with the switch off the tools answer nothing."""
    if not await uow.users.memory_enabled(uid):
        raise MemoryDisabled("memory is turned off for this user")
