"""The chatbot graph, its run context and its input, for one claimed run.

The graph is the runtime's cached one for the run's configuration (the memory switch, read
again here as the run starts; :class:`~yuxi.runtime.graph_cache.GraphCache`). Everything of the
run goes into its :class:`~yuxi.agents.context.RunContext`: the identity from the claim, the
user's workspace, the shared context (``build_agent_input_context``: the chat prompt plus
AGENTS.md and USER.md), the memory snapshot the memory middleware injects and a
:class:`SubagentRunner` bound to this run. The executor records that same snapshot as the run
starts (``RunService.start``, in the transaction of the run's ``running`` event) and invokes the
graph with ``context=assembled.context``: what is recorded is what is injected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.messages import HumanMessage
from langgraph.types import Command

from yuxi.agents.context import RunContext, build_agent_input_context
from yuxi.agents.graphs.chatbot import AgentGraph
from yuxi.agents.middlewares.memory import run_memory
from yuxi.agents.prompts import CHAT_SYSTEM_PROMPT
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
    #: Shared by every run of its configuration.
    graph: AgentGraph
    #: This run's, and only this run's: pass it as ``context=``.
    context: RunContext

    @property
    def snapshot(self) -> MemorySnapshot | None:
        """What the memory middleware injects into this run (None: memory is off)."""
        memory = self.context.memory
        return None if memory is None else memory.snapshot


async def assemble_chatbot_graph(
    claimed: ClaimedRun, *, services: Services, runtime: AgentRuntime, workspace: Workspace
) -> AssembledGraph:
    identity = claimed.identity
    agent_input = await build_agent_input_context(
        workspace=workspace,
        identity=identity,
        base_prompt=CHAT_SYSTEM_PROMPT,
        ensure_workspace=True,
    )
    # The switch as the claim that starts this run read it: off → no snapshot (MEMORY.md is
    # not opened) and the graph without memory.
    snapshot = (
        await services.memory.read_memory_snapshot(identity.uid) if claimed.memory_enabled else None
    )
    subagents = SubagentRunner(services.runs, runtime, workspace)
    context = RunContext(
        identity,
        workspace,
        agent_input.system_prompt,
        memory=None if snapshot is None else run_memory(snapshot),
        subagents=subagents.bound_to(identity),
    )
    graph = runtime.graphs.chatbot(
        model=runtime.model,
        memory=services.memory,
        lookback=services.lookback,
        files=services.files,
        checkpointer=runtime.checkpointer,
        memory_on=snapshot is not None,
        delegate=True,
        model_call_limit=runtime.limits.model_calls,
        tool_call_limit=runtime.limits.tool_calls,
    )
    return AssembledGraph(graph, context)


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
