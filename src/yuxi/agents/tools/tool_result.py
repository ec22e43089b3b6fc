"""The one tool boundary: a service call in, a ``ToolMessage`` out.

Every agent tool (the memory tools, the workspace file tools, the delegation tool) runs its
service call through :func:`tool_message`. The result's status is decided here, once, and
carried by ``ToolMessage.status``; nothing downstream parses the content to learn it:

* a typed result → ``status="success"``, content = compact JSON of ``result.to_payload()``;
* any :class:`~yuxi.errors.YuxiError` → ``status="error"``, content =
  ``{"status": "error", "code": …, "error": …}`` (plus the error's ``details``, e.g. the
  ``quota_remaining`` of a refused memory write) — the model is told, the run goes on;
* an unexpected exception → logged, and the same error shape with ``storage_unavailable``
  (its text never reaches the model);
* LangGraph control flow (:class:`~langgraph.errors.GraphBubbleUp`: interrupts, parent
  commands) and cancellation propagate unchanged.

LangChain's ``BaseTool`` passes a returned ``ToolMessage`` through unchanged (``_format_output``),
so the tool call id and the tool name are set here. :func:`tool_outcome` is the same path
without the message, for callers (and tests) that want the payload of a service call.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp

from yuxi.errors import StorageUnavailable, YuxiError
from yuxi.utils.json_utils import compact_json

__all__ = ["ToolPayload", "error_payload", "tool_message", "tool_outcome"]

_log = logging.getLogger(__name__)

_UNEXPECTED = StorageUnavailable("the tool could not run right now; nothing was changed")


class ToolPayload(Protocol):
    """A typed service result: one method gives what the model sees."""

    def to_payload(self) -> dict[str, Any]: ...


def error_payload(error: YuxiError) -> dict[str, Any]:
    """``{"status": "error", "code", "error"}`` plus the error's ``details`` (if any)."""
    return {"status": "error", "code": error.code, "error": error.message, **error.details}


async def tool_outcome(call: Callable[[], Awaitable[ToolPayload]]) -> tuple[dict[str, Any], bool]:
    """Await ``call()``; return ``(model-facing payload, is_error)``. Never raises, except for
    LangGraph control flow and cancellation."""
    try:
        result = await call()
    except GraphBubbleUp:
        raise
    except YuxiError as exc:
        return error_payload(exc), True
    except Exception:  # a tool never crashes the run (design.md §3)
        _log.exception("tool call failed unexpectedly")
        return error_payload(_UNEXPECTED), True
    return result.to_payload(), False


async def tool_message(
    name: str, runtime: ToolRuntime[Any, Any], call: Callable[[], Awaitable[ToolPayload]]
) -> ToolMessage:
    """Run one tool's service call and answer with the ``ToolMessage`` for this tool call."""
    payload, is_error = await tool_outcome(call)
    return ToolMessage(
        content=compact_json(payload),
        tool_call_id=runtime.tool_call_id or "",
        name=name,
        status="error" if is_error else "success",
    )
