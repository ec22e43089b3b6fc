"""History lookback: the two bounded tools over the user's own ordinary past conversations.

Owner of ``search_thread_messages`` and ``read_thread_messages`` (DESIGN.md §5) on the service
side: argument validation, the memory switch, the transaction. Visibility, the field allowlist and
every byte budget live in :mod:`yuxi.repositories.conversation_repository`.

Every coroutine returns a structured result and never raises for an expected failure: the model
is told, the run goes on.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from yuxi.errors import NotFound
from yuxi.limits import READ_MAX_MESSAGES, SEARCH_MAX_ITEMS, SEARCH_QUERY_MAX_CHARS
from yuxi.services._tool_args import int_arg, tool_error
from yuxi.services.unit_of_work import UnitOfWorkFactory
from yuxi.utils.string_utils import is_valid_text

__all__ = ["LookbackService"]

_log = logging.getLogger(__name__)


class LookbackService:
    def __init__(self, uow: UnitOfWorkFactory) -> None:
        self._uow = uow

    async def search_thread_messages(
        self, *, uid: str, query: object, limit: object = 5
    ) -> dict[str, Any]:
        if not isinstance(uid, str) or not uid or not is_valid_text(uid):
            return tool_error("unauthorized_run", "no trusted user identity")
        if not isinstance(query, str):
            return tool_error("invalid_argument", "query must be a string")
        try:
            query.encode("utf-8")
        except UnicodeEncodeError:
            return tool_error("invalid_argument", "query is not valid Unicode (lone surrogate)")
        q = query.strip()
        if "\x00" in q:
            return tool_error("invalid_argument", "query must not contain NUL characters")
        if not 1 <= len(q) <= SEARCH_QUERY_MAX_CHARS:
            return tool_error(
                "invalid_argument",
                f"query must be 1..{SEARCH_QUERY_MAX_CHARS} characters after stripping",
            )
        n = int_arg(limit, "limit", 1, SEARCH_MAX_ITEMS)
        if isinstance(n, dict):
            return n
        try:
            async with self._uow() as uow:
                if not await uow.users.memory_enabled(uid):
                    return tool_error("memory_disabled", "memory is turned off for this user")
                return await uow.conversations.search_messages(uid, q, n)
        except SQLAlchemyError as exc:
            _log.warning("search_thread_messages failed: %r", exc)
            return tool_error("storage_unavailable", "history is unavailable right now")

    async def read_thread_messages(
        self,
        *,
        uid: str,
        thread_id: object,
        message_id: object = None,
        limit: object = 20,
        include_tools: object = False,
    ) -> dict[str, Any]:
        if not isinstance(uid, str) or not uid or not is_valid_text(uid):
            return tool_error("unauthorized_run", "no trusted user identity")
        if not isinstance(thread_id, str) or not thread_id.strip() or len(thread_id) > 64:
            return tool_error("invalid_argument", "thread_id must be a non-empty thread id")
        anchor: int | None = None
        if message_id is not None:
            parsed = int_arg(message_id, "message_id", 1, 2**63 - 1)
            if isinstance(parsed, dict):
                return parsed
            anchor = parsed
        n = int_arg(limit, "limit", 1, READ_MAX_MESSAGES)
        if isinstance(n, dict):
            return n
        if not isinstance(include_tools, bool):
            return tool_error("invalid_argument", "include_tools must be true or false")
        try:
            async with self._uow() as uow:
                if not await uow.users.memory_enabled(uid):
                    return tool_error("memory_disabled", "memory is turned off for this user")
                return await uow.conversations.read_messages(
                    uid, thread_id.strip(), message_id=anchor, limit=n, include_tools=include_tools
                )
        except NotFound as exc:
            return tool_error("not_found", exc.message)
        except SQLAlchemyError as exc:
            _log.warning("read_thread_messages failed: %r", exc)
            return tool_error("storage_unavailable", "history is unavailable right now")
