"""The SubAgent delegation tool. The runtime (worker) supplies ``run_subagent``.

``run_subagent(task, runtime)`` runs the SubAgent graph in a persisted child thread and returns
its final answer as a :class:`SubagentReply` (or raises :class:`~yuxi.errors.SubagentFailed`);
this module only builds the model-facing tool around it. Delegation is only for top-level runs
(a complete :class:`RunIdentity` with a ``worker_id``): a SubAgent cannot delegate further.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp

from yuxi.agents.context import RunIdentity, trusted_context
from yuxi.agents.prompts import DELEGATE_TOOL_DESCRIPTION
from yuxi.agents.tools.run_tool import make_run_tool
from yuxi.agents.tools.tool_result import tool_message
from yuxi.errors import SubagentFailed, UnauthorizedRun
from yuxi.limits import SUBAGENT_TASK_MAX_BYTES
from yuxi.utils.string_utils import check_text

__all__ = [
    "DELEGATE_TOOL_NAME",
    "RunSubagent",
    "SubagentReply",
    "make_delegate_tool",
]

_log = logging.getLogger(__name__)

DELEGATE_TOOL_NAME = "delegate_to_subagent"


@dataclass(frozen=True)
class SubagentReply:
    """A SubAgent's final answer, and the child thread it worked in (when persisted)."""

    reply: str
    thread_id: str | None = None

    def to_payload(self) -> dict[str, Any]:
        payload: dict[str, Any] = {"status": "ok"}
        if self.thread_id is not None:
            payload["thread_id"] = self.thread_id
        payload["reply"] = self.reply
        return payload


RunSubagent = Callable[[str, ToolRuntime[Any, Any]], Awaitable[SubagentReply]]


def make_delegate_tool(run_subagent: RunSubagent) -> BaseTool:
    async def delegate(task: str, runtime: ToolRuntime[RunIdentity | None, Any]) -> SubagentReply:
        if trusted_context(runtime.context, require_worker=True) is None:
            raise UnauthorizedRun("only a top-level run may delegate")
        text = check_text("task", task, max_bytes=SUBAGENT_TASK_MAX_BYTES).strip()
        try:
            return await run_subagent(text, runtime)
        except (GraphBubbleUp, SubagentFailed):  # control flow; an already-told failure
            raise
        except Exception:  # the parent run goes on and is told
            _log.exception("SubAgent delegation failed")
            raise SubagentFailed("the SubAgent could not complete the task") from None

    async def delegate_to_subagent(
        task: str, *, runtime: ToolRuntime[RunIdentity | None, Any]
    ) -> ToolMessage:
        return await tool_message(DELEGATE_TOOL_NAME, runtime, lambda: delegate(task, runtime))

    return make_run_tool(
        delegate_to_subagent,
        name=DELEGATE_TOOL_NAME,
        description=DELEGATE_TOOL_DESCRIPTION,
    )
