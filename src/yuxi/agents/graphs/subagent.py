"""The SubAgent graph: read-only workspace access, no memory middleware, no memory tools.

Its prompt comes from :func:`build_agent_input_context` (AGENTS.md + USER.md, never MEMORY.md)
and it is invoked with a :class:`RunContext` whose ``worker_id`` is ``None``.
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langgraph.types import Checkpointer

from yuxi.agents.context import RunContext
from yuxi.agents.graphs.chatbot import AgentGraph
from yuxi.agents.tools.workspace_tools import make_read_workspace_tool
from yuxi.workspace.filesystem import Workspace

__all__ = ["build_subagent_graph"]


def build_subagent_graph(
    *,
    model: BaseChatModel,
    workspace: Workspace,
    system_prompt: str,
    checkpointer: Checkpointer | None = None,
) -> AgentGraph:
    return create_agent(
        model,
        tools=[make_read_workspace_tool(workspace=workspace)],
        system_prompt=system_prompt,
        context_schema=RunContext,
        checkpointer=checkpointer,
        name="yuxi_subagent",
    )
