"""The SubAgent delegation tool. The runtime (worker) supplies each run's SubAgent runner.

The tool is built once per compiled graph; the runner comes from the run context of the call
itself (``RunContext.subagents``, bound by the runtime to that run): it runs the SubAgent graph
in a persisted child thread and returns its final answer as a :class:`SubagentReply` (or raises
:class:`~yuxi.errors.SubagentFailed`). Delegation is only for top-level runs (a complete run
context with a ``worker_id`` and a runner): a SubAgent cannot delegate further.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp

from yuxi.agents.context import RunContext, RunSubagent, SubagentReply, trusted_context
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


def make_delegate_tool() -> BaseTool:
    async def delegate(task: str, runtime: ToolRuntime[RunContext | None, Any]) -> SubagentReply:
        context = trusted_context(runtime.context, require_worker=True)
        if context is None or context.subagents is None:
            raise UnauthorizedRun("only a top-level run may delegate")
        text = check_text("task", task, max_bytes=SUBAGENT_TASK_MAX_BYTES).strip()
        try:
            return await context.subagents(text)
        except (GraphBubbleUp, SubagentFailed):  # control flow; an already-told failure
            raise
        except Exception:  # the parent run goes on and is told
            _log.exception("SubAgent delegation failed")
            raise SubagentFailed("the SubAgent could not complete the task") from None

    async def delegate_to_subagent(
        task: str, *, runtime: ToolRuntime[RunContext | None, Any]
    ) -> ToolMessage:
        return await tool_message(DELEGATE_TOOL_NAME, runtime, lambda: delegate(task, runtime))

    return make_run_tool(
        delegate_to_subagent,
        name=DELEGATE_TOOL_NAME,
        description=DELEGATE_TOOL_DESCRIPTION,
    )
