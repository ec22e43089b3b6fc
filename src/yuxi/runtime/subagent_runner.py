"""Run a SubAgent for a delegating top-level run, in a persisted child thread of its own.

The run service records the child thread (linked to the parent's, so history never shows it),
a ``subagent`` run and the task, then the answer. The SubAgent never gets the memory middleware,
and its identity carries no ``worker_id``, so even a forged memory call could not pass the
memory write gate.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from yuxi.agents.context import build_agent_input_context
from yuxi.agents.graphs.subagent import build_subagent_graph
from yuxi.agents.prompts import SUBAGENT_SYSTEM_PROMPT
from yuxi.agents.tools.delegate import SubagentReply
from yuxi.errors import SubagentFailed
from yuxi.identity import RunIdentity
from yuxi.runtime.stream_events import message_text
from yuxi.services.runs.service import RunService
from yuxi.workspace.filesystem import Workspace

__all__ = ["SubagentRunner"]


class SubagentRunner:
    def __init__(
        self,
        runs: RunService,
        model: BaseChatModel,
        workspace: Workspace,
        *,
        model_call_limit: int | None = None,
        tool_call_limit: int | None = None,
    ) -> None:
        self._runs = runs
        self._model = model
        self._workspace = workspace
        self._limits = (model_call_limit, tool_call_limit)

    async def run(self, parent: RunIdentity, task: str) -> SubagentReply:
        """The SubAgent's answer as the delegate tool's result.

        A failing SubAgent is recorded as a failed child run and raised as
        :class:`SubagentFailed`, which the delegate tool reports to the model as an error; the
        parent run goes on.
        """
        child = await self._runs.start_subagent(parent, task)
        agent_input = await build_agent_input_context(
            workspace=self._workspace, identity=child, base_prompt=SUBAGENT_SYSTEM_PROMPT
        )
        graph = build_subagent_graph(
            model=self._model,
            workspace=self._workspace,
            system_prompt=agent_input.system_prompt,
            model_call_limit=self._limits[0],
            tool_call_limit=self._limits[1],
        )
        try:
            result = await graph.ainvoke({"messages": [HumanMessage(content=task)]}, context=child)
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}"
            await self._runs.finish_subagent(child, "failed", f"SubAgent failed: {why}")
            raise SubagentFailed(f"the SubAgent in thread {child.thread_id} failed: {why}") from exc
        messages = result.get("messages", [])
        reply = message_text(messages[-1]) if messages else ""
        await self._runs.finish_subagent(child, "completed", reply)
        return SubagentReply(reply, child.thread_id)
