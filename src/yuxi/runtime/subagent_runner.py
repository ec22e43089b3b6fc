"""Run a SubAgent for a delegating top-level run, in a persisted child thread of its own.

The SubAgent graph is the runtime's cached one (:class:`~yuxi.runtime.graph_cache.GraphCache`),
shared by every SubAgent run; this run's identity, workspace and prompt reach it as its run
context. The run service records the child thread (linked to the parent's, so history never
shows it), a ``subagent`` run and the task, then the answer. The SubAgent never gets the memory
middleware, its context carries no memory, and its identity carries no ``worker_id``, so even a
forged memory call could not pass the memory tools' check or the memory write gate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_core.messages import HumanMessage

from yuxi.agents.context import RunContext, RunSubagent, build_agent_input_context
from yuxi.agents.prompts import SUBAGENT_SYSTEM_PROMPT
from yuxi.agents.tools.delegate import SubagentReply
from yuxi.errors import SubagentFailed
from yuxi.identity import RunIdentity
from yuxi.runtime.stream_events import message_text
from yuxi.services.runs.service import RunService
from yuxi.workspace.filesystem import Workspace

if TYPE_CHECKING:
    from yuxi.runtime.agent_runtime import AgentRuntime

__all__ = ["SubagentRunner"]


class SubagentRunner:
    def __init__(self, runs: RunService, runtime: AgentRuntime, workspace: Workspace) -> None:
        self._runs = runs
        self._runtime = runtime
        self._workspace = workspace

    def bound_to(self, parent: RunIdentity) -> RunSubagent:
        """The runner of ``parent``'s run context: SubAgents for that run only."""

        async def run_subagent(task: str) -> SubagentReply:
            return await self.run(parent, task)

        return run_subagent

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
        runtime = self._runtime
        graph = runtime.graphs.subagent(
            model=runtime.model,
            model_call_limit=runtime.limits.model_calls,
            tool_call_limit=runtime.limits.tool_calls,
        )
        context = RunContext(child, self._workspace, agent_input.system_prompt)
        try:
            result = await graph.ainvoke(
                {"messages": [HumanMessage(content=task)]}, context=context
            )
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}"
            await self._runs.finish_subagent(child, "failed", f"SubAgent failed: {why}")
            raise SubagentFailed(f"the SubAgent in thread {child.thread_id} failed: {why}") from exc
        messages = result.get("messages", [])
        reply = message_text(messages[-1]) if messages else ""
        await self._runs.finish_subagent(child, "completed", reply)
        return SubagentReply(reply, child.thread_id)
