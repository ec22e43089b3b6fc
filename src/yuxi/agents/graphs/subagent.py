"""The SubAgent graph: read-only workspace access, no memory middleware, no memory tools.

Compiled once per configuration and shared by every SubAgent run: each is invoked with a
:class:`~yuxi.agents.context.RunContext` whose identity has no ``worker_id`` and whose memory and
runner are ``None``; its prompt (the context's ``system_prompt``) comes from
:func:`build_agent_input_context` (AGENTS.md + USER.md, never MEMORY.md).

``checkpointer=None`` means *no* checkpointing. LangGraph would otherwise treat a graph compiled
without a checkpointer and invoked inside a parent's tool as a subgraph that inherits the
parent's checkpointer, writing SubAgent state into the parent thread's checkpoints (under a
``tools:<task>`` namespace); ``False`` keeps the SubAgent's state out of the parent thread.
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langgraph.types import Checkpointer

from yuxi.agents.context import RunContext
from yuxi.agents.graphs.chatbot import AgentGraph, run_limit_middleware
from yuxi.agents.middlewares.run_prompt import RunPromptMiddleware
from yuxi.agents.middlewares.tool_call_integrity import ToolCallIntegrityMiddleware
from yuxi.agents.tools.workspace_tools import make_read_workspace_tool

__all__ = ["SUBAGENT_AGENT_NAME", "compile_subagent_graph"]

#: ``lc_agent_name`` in stream metadata, so a parent stream can tell SubAgent tokens apart.
SUBAGENT_AGENT_NAME = "subagent"


def compile_subagent_graph(
    *,
    model: BaseChatModel,
    checkpointer: Checkpointer | None = None,
    model_call_limit: int | None = None,
    tool_call_limit: int | None = None,
) -> AgentGraph:
    return create_agent(
        model,
        tools=[make_read_workspace_tool()],
        middleware=[
            RunPromptMiddleware(),
            ToolCallIntegrityMiddleware(),
            *run_limit_middleware(model_call_limit, tool_call_limit),
        ],
        context_schema=RunContext,
        checkpointer=checkpointer if checkpointer is not None else False,
        name=SUBAGENT_AGENT_NAME,
    )
