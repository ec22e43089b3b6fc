"""The SubAgent delegation tool. The runtime (worker) supplies ``run_subagent``.

``run_subagent(task, runtime)`` runs the SubAgent graph in a persisted child thread and returns
its final answer; this module only builds the model-facing tool around it. Delegation is only
for top-level runs (a complete :class:`RunIdentity` with a ``worker_id``): a SubAgent cannot
delegate further.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.errors import GraphBubbleUp

from yuxi.agents._common import error_result
from yuxi.agents.context import RunIdentity, trusted_context

__all__ = ["DELEGATE_TOOL_NAME", "TASK_MAX_BYTES", "RunSubagent", "make_delegate_tool"]

_log = logging.getLogger(__name__)

DELEGATE_TOOL_NAME = "delegate_to_subagent"
TASK_MAX_BYTES = 8 * 1024

RunSubagent = Callable[[str, ToolRuntime[Any, Any]], Awaitable[str]]


def make_delegate_tool(run_subagent: RunSubagent) -> BaseTool:
    async def delegate_to_subagent(
        task: str, *, runtime: ToolRuntime[RunIdentity | None, Any]
    ) -> str:
        if trusted_context(runtime.context, require_worker=True) is None:
            return error_result("unauthorized_run", "only a top-level run may delegate")
        if not isinstance(task, str) or not task.strip():
            return error_result("invalid_argument", "task must be a non-empty description")
        try:
            size = len(task.encode("utf-8"))
        except UnicodeEncodeError:
            return error_result("invalid_argument", "task is not valid Unicode")
        if size > TASK_MAX_BYTES or "\x00" in task:
            return error_result(
                "invalid_argument", f"task must be at most {TASK_MAX_BYTES} bytes, without NUL"
            )
        try:
            return await run_subagent(task.strip(), runtime)
        except GraphBubbleUp:  # interrupts and parent commands are LangGraph control flow
            raise
        except Exception:  # the parent run goes on and is told
            _log.exception("SubAgent delegation failed")
            return error_result("subagent_failed", "the SubAgent could not complete the task")

    return StructuredTool.from_function(
        coroutine=delegate_to_subagent,
        name=DELEGATE_TOOL_NAME,
        description=(
            "Hand a self-contained `task` to a SubAgent, which works in its own thread with "
            "read-only access to the workspace and no long-term memory, and returns its answer."
        ),
    )
