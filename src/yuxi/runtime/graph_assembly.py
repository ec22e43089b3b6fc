"""Build the chatbot graph, and its input, for one claimed run.

The graph gets the shared context (``build_agent_input_context``: the chat prompt plus AGENTS.md
and USER.md), the memory and lookback services (the memory middleware decides per run whether
memory is on) and the delegate tool backed by a :class:`SubagentRunner`. It is invoked with
``context=claimed.identity``. The memory snapshot the middleware will inject comes back with the
graph: the executor records it as the run starts (``RunService.start``), in the transaction of
the run's ``running`` event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain.tools import ToolRuntime
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from yuxi.agents.context import build_agent_input_context
from yuxi.agents.graphs.chatbot import AgentGraph, build_chatbot_graph
from yuxi.agents.prompts import CHAT_SYSTEM_PROMPT
from yuxi.agents.tools.delegate import SubagentReply, make_delegate_tool
from yuxi.runtime.subagent_runner import SubagentRunner
from yuxi.services.memory.service import MemorySnapshot
from yuxi.services.runs.service import ClaimedRun, RunService
from yuxi.workspace.filesystem import Workspace

if TYPE_CHECKING:
    from yuxi.runtime.agent_runtime import AgentRuntime
    from yuxi.services.service_set import Services

__all__ = ["AssembledGraph", "assemble_chatbot_graph", "build_graph_input"]

REJECTION_MESSAGE = "The user rejected this action."


@dataclass(frozen=True)
class AssembledGraph:
    graph: AgentGraph
    #: What the memory middleware injects into this run (None: memory is off).
    snapshot: MemorySnapshot | None


async def assemble_chatbot_graph(
    claimed: ClaimedRun, *, services: Services, runtime: AgentRuntime, workspace: Workspace
) -> AssembledGraph:
    identity = claimed.identity
    runs = services.runs
    await workspace.ensure_user_workspace()
    agent_input = await build_agent_input_context(
        workspace=workspace, identity=identity, base_prompt=CHAT_SYSTEM_PROMPT
    )
    seen: list[MemorySnapshot] = []

    async def on_snapshot(snapshot: MemorySnapshot) -> None:
        seen.append(snapshot)

    subagents = SubagentRunner(
        runs,
        runtime.model,
        workspace,
        model_call_limit=runtime.limits.model_calls,
        tool_call_limit=runtime.limits.tool_calls,
    )

    async def run_subagent(task: str, tool_runtime: ToolRuntime[Any, Any]) -> SubagentReply:
        # The delegate tool has checked that tool_runtime.context is this top-level run.
        return await subagents.run(identity, task)

    graph = await build_chatbot_graph(
        model=runtime.model,
        memory=services.memory,
        lookback=services.lookback,
        files=services.files,
        workspace=workspace,
        context=identity,
        system_prompt=agent_input.system_prompt,
        delegate_tool=make_delegate_tool(run_subagent),
        checkpointer=runtime.checkpointer,
        on_snapshot=on_snapshot,
        model_call_limit=runtime.limits.model_calls,
        tool_call_limit=runtime.limits.tool_calls,
    )
    return AssembledGraph(graph, seen[0] if seen else None)


async def build_graph_input(claimed: ClaimedRun, runs: RunService) -> Any:
    """A chat run's user message, or a resume run's decision for every interrupted action."""
    if claimed.run_type != "resume":
        return {"messages": [HumanMessage(content=str(claimed.input_payload.get("input", "")))]}
    count = max(1, len(await runs.interrupted_action_requests(claimed)))
    if claimed.input_payload.get("decision") == "approve":
        decisions: list[dict[str, str]] = [{"type": "approve"} for _ in range(count)]
    else:
        decisions = [{"type": "reject", "message": REJECTION_MESSAGE} for _ in range(count)]
    return Command(resume={"decisions": decisions})
