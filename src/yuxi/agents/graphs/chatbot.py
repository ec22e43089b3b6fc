"""The top-level chatbot graph: the only place the memory middleware is constructed.

Compiled once per configuration (:func:`compile_chatbot_graph`; the runtime keeps the cache) and
invoked by each run with its own :class:`~yuxi.agents.context.RunContext`.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    InputAgentState,
    InterruptOnConfig,
    ModelCallLimitMiddleware,
    OutputAgentState,
    ToolCallLimitMiddleware,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from yuxi.agents.context import RunContext
from yuxi.agents.middlewares.memory import create_memory_middleware
from yuxi.agents.middlewares.run_prompt import RunPromptMiddleware
from yuxi.agents.middlewares.taint import (
    REMEMBER_MEMORY_TOOL,
    ApprovalMiddleware,
    memory_write_approval,
)
from yuxi.agents.middlewares.tool_call_integrity import (
    ToolCallIntegrityMiddleware,
    call_is_unanswered,
)
from yuxi.agents.ports import LookbackPort, MemoryPort, WorkspaceFilesPort
from yuxi.agents.prompts import MEMORY_OFF_NOTE
from yuxi.agents.tools.delegate import make_delegate_tool
from yuxi.agents.tools.workspace_tools import SENSITIVE_TOOLS, make_workspace_tools

__all__ = ["CHATBOT_AGENT_NAME", "AgentGraph", "compile_chatbot_graph", "run_limit_middleware"]

#: ``lc_agent_name`` in stream metadata and ``AIMessage.name`` of the chatbot's answers.
CHATBOT_AGENT_NAME = "chatbot"

AgentGraph: TypeAlias = CompiledStateGraph[
    AgentState[Any], RunContext, InputAgentState, OutputAgentState[Any]
]


def run_limit_middleware(
    model_calls: int | None, tool_calls: int | None
) -> list[AgentMiddleware[Any, Any, Any]]:
    """LangChain's own per-run limits; exceeding one raises (the run fails, nothing half-done:
    a model call is refused before it starts, a batch of tool calls before any of them runs)."""
    limits: list[AgentMiddleware[Any, Any, Any]] = []
    if model_calls is not None:
        limits.append(ModelCallLimitMiddleware(run_limit=model_calls, exit_behavior="error"))
    if tool_calls is not None:
        limits.append(ToolCallLimitMiddleware(run_limit=tool_calls, exit_behavior="error"))
    return limits


def compile_chatbot_graph(
    *,
    model: BaseChatModel,
    memory: MemoryPort,
    lookback: LookbackPort,
    files: WorkspaceFilesPort,
    memory_on: bool,
    delegate: bool,
    checkpointer: Checkpointer | None,
    model_call_limit: int | None = None,
    tool_call_limit: int | None = None,
) -> AgentGraph:
    """Compile the chatbot graph of one configuration; every run of it shares the graph.

    Nothing of a run is bound here: each invocation passes its own
    :class:`~yuxi.agents.context.RunContext` (``context=``), from which the run prompt middleware
    takes the system prompt (the shared context, :func:`build_agent_input_context`), the memory
    middleware the memory block and every tool the identity and workspace. ``memory_on`` is the
    run's memory switch, re-queried as each run starts: on, the memory middleware adds the
    memory block and the four memory tools; off, there are none and the system prompt ends with
    ``MEMORY_OFF_NOTE`` (the model can tell the user memory is off, not that it is empty).
    ``delegate`` adds the delegate tool (the runner comes from the run context). The generic
    write/edit tools pause for human approval, and so does ``remember_memory`` in a tainted run
    (after untrusted input) or when its content looks like a secret (see
    :mod:`yuxi.agents.middlewares.taint`); the generic tools may touch MEMORY.md only while
    memory is on.
    """
    tools: list[BaseTool] = make_workspace_tools(
        memory=memory, files=files, allow_memory_file=memory_on
    )
    if delegate:
        tools.append(make_delegate_tool())
    # Outermost model-call wrapper: the run's prompt first, the memory block appended to it.
    middleware: list[AgentMiddleware[Any, RunContext, Any]] = [
        RunPromptMiddleware(note=None if memory_on else MEMORY_OFF_NOTE)
    ]
    # Approve or reject (the resume API takes nothing else); a call the integrity middleware
    # already answered (cut off, malformed) is never put to a human.
    approval = InterruptOnConfig(allowed_decisions=["approve", "reject"], when=call_is_unanswered)
    interrupt_on: dict[str, bool | InterruptOnConfig] = dict.fromkeys(SENSITIVE_TOOLS, approval)
    if memory_on:
        middleware.append(create_memory_middleware(memory=memory, lookback=lookback))
        # A memory write after untrusted input, or of something secret-shaped, waits for the
        # user (yuxi.agents.middlewares.taint).
        held = memory_write_approval()
        held_only = held["when"]
        held["when"] = lambda request: call_is_unanswered(request) and held_only(request)
        interrupt_on[REMEMBER_MEMORY_TOOL] = held
    middleware.append(ApprovalMiddleware(interrupt_on=interrupt_on))
    middleware.append(ToolCallIntegrityMiddleware())
    middleware.extend(run_limit_middleware(model_call_limit, tool_call_limit))
    return create_agent(
        model,
        tools=tools,
        middleware=middleware,
        context_schema=RunContext,
        checkpointer=checkpointer,
        name=CHATBOT_AGENT_NAME,
    )
