"""The SubAgent graph: read-only workspace access, no memory middleware, no memory tools.

Its prompt comes from :func:`build_agent_input_context` (AGENTS.md + USER.md, never MEMORY.md)
and it is invoked with a :class:`RunIdentity` whose ``worker_id`` is ``None``.

``checkpointer=None`` means *no* checkpointing. LangGraph would otherwise treat a graph compiled
without a checkpointer and invoked inside a parent's tool as a subgraph that inherits the
parent's checkpointer, writing SubAgent state into the parent thread's checkpoints (under a
``tools:<task>`` namespace); ``False`` keeps the SubAgent's state out of the parent thread.
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langgraph.types import Checkpointer

from yuxi.agents.context import RunIdentity
from yuxi.agents.graphs.chatbot import AgentGraph, run_limit_middleware
from yuxi.agents.middlewares.tool_call_integrity import ToolCallIntegrityMiddleware
from yuxi.agents.tools.workspace_tools import make_read_workspace_tool
from yuxi.workspace.filesystem import Workspace

__all__ = ["SUBAGENT_AGENT_NAME", "build_subagent_graph"]

#: ``lc_agent_name`` in stream metadata, so a parent stream can tell SubAgent tokens apart.
SUBAGENT_AGENT_NAME = "subagent"


def build_subagent_graph(
    *,
    model: BaseChatModel,
    workspace: Workspace,
    system_prompt: str,
    checkpointer: Checkpointer | None = None,
    model_call_limit: int | None = None,
    tool_call_limit: int | None = None,
) -> AgentGraph:
    return create_agent(
        model,
        tools=[make_read_workspace_tool(workspace=workspace)],
        system_prompt=system_prompt,
        middleware=[
            ToolCallIntegrityMiddleware(),
            *run_limit_middleware(model_call_limit, tool_call_limit),
        ],
        context_schema=RunIdentity,
        checkpointer=checkpointer if checkpointer is not None else False,
        name=SUBAGENT_AGENT_NAME,
    )
