"""The top-level chatbot graph: the only place the memory middleware is constructed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
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

from yuxi.agents.context import RunIdentity
from yuxi.agents.middlewares.memory import create_memory_middleware
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
from yuxi.agents.tools.workspace_tools import SENSITIVE_TOOLS, make_workspace_tools
from yuxi.services.memory.service import MemorySnapshot
from yuxi.workspace.filesystem import Workspace

__all__ = ["CHATBOT_AGENT_NAME", "AgentGraph", "build_chatbot_graph", "run_limit_middleware"]

#: ``lc_agent_name`` in stream metadata and ``AIMessage.name`` of the chatbot's answers.
CHATBOT_AGENT_NAME = "chatbot"

AgentGraph: TypeAlias = CompiledStateGraph[
    AgentState[Any], RunIdentity, InputAgentState, OutputAgentState[Any]
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


async def build_chatbot_graph(
    *,
    model: BaseChatModel,
    memory: MemoryPort,
    lookback: LookbackPort,
    files: WorkspaceFilesPort,
    workspace: Workspace,
    context: RunIdentity,
    system_prompt: str,
    delegate_tool: BaseTool | None,
    checkpointer: Checkpointer | None,
    on_snapshot: Callable[[MemorySnapshot], Awaitable[None]] | None = None,
    model_call_limit: int | None = None,
    tool_call_limit: int | None = None,
) -> AgentGraph:
    """Build the chatbot graph for one new run (chat or resume) of ``context``.

    ``system_prompt`` is the shared context (:func:`build_agent_input_context`). The memory
    switch is re-queried here; when on, the memory middleware adds the memory block and the
    four memory tools; when off, the system prompt ends with ``MEMORY_OFF_NOTE`` (the model
    can tell the user memory is off, not that it is empty). The generic write/edit tools pause
    for human approval, and so does ``remember_memory`` in a tainted run (after untrusted
    input) or when its content looks like a secret (see :mod:`yuxi.agents.middlewares.taint`);
    the generic tools may touch MEMORY.md only
    while memory is on. Invoke the graph with ``context=context``.
    """
    if workspace.uid != context.uid:
        raise ValueError("the workspace does not belong to the run's user")
    memory_middleware = await create_memory_middleware(
        memory=memory, lookback=lookback, context=context, on_snapshot=on_snapshot
    )
    tools: list[BaseTool] = make_workspace_tools(
        workspace=workspace,
        memory=memory,
        files=files,
        allow_memory_file=memory_middleware is not None,
    )
    if delegate_tool is not None:
        tools.append(delegate_tool)
    middleware: list[AgentMiddleware[Any, RunIdentity, Any]] = []
    # Approve or reject (the resume API takes nothing else); a call the integrity middleware
    # already answered (cut off, malformed) is never put to a human.
    approval = InterruptOnConfig(allowed_decisions=["approve", "reject"], when=call_is_unanswered)
    interrupt_on: dict[str, bool | InterruptOnConfig] = dict.fromkeys(SENSITIVE_TOOLS, approval)
    if memory_middleware is not None:
        middleware.append(memory_middleware)
        # A memory write after untrusted input, or of something secret-shaped, waits for the
        # user (yuxi.agents.middlewares.taint).
        held = memory_write_approval()
        held_only = held["when"]
        held["when"] = lambda request: call_is_unanswered(request) and held_only(request)
        interrupt_on[REMEMBER_MEMORY_TOOL] = held
    middleware.append(ApprovalMiddleware(interrupt_on=interrupt_on))
    middleware.append(ToolCallIntegrityMiddleware())
    middleware.extend(run_limit_middleware(model_call_limit, tool_call_limit))
    if memory_middleware is None:
        system_prompt = (
            f"{system_prompt}\n\n{MEMORY_OFF_NOTE}" if system_prompt else MEMORY_OFF_NOTE
        )
    return create_agent(
        model,
        tools=tools,
        system_prompt=system_prompt,
        middleware=middleware,
        context_schema=RunIdentity,
        checkpointer=checkpointer,
        name=CHATBOT_AGENT_NAME,
    )
