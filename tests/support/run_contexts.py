"""Run contexts for the agent unit tests: what the runtime hands a shared graph for one run.

The graphs and tools are compiled once and shared; each run is a :class:`RunContext`. These
helpers build one as the runtime does (:func:`run_context`, :func:`chatbot_run`), or forge one
past its construction checks (:func:`forged_context`) to prove the tools' own checks.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Checkpointer

from tests.support.agent_fakes import CTX, FakeMemory
from yuxi.agents.context import (
    RunContext,
    RunIdentity,
    RunMemory,
    RunSubagent,
    build_agent_input_context,
)
from yuxi.agents.graphs import AgentGraph, compile_chatbot_graph
from yuxi.agents.middlewares.memory import run_memory
from yuxi.services.memory import snapshot_of
from yuxi.workspace.filesystem import Workspace

__all__ = [
    "ChatRun",
    "chat_run",
    "chatbot_run",
    "forged_context",
    "memory_of",
    "run_context",
]


def memory_of(text: str, *, nonce: str | None = None) -> RunMemory:
    """What a run with ``text`` in MEMORY.md injects (the snapshot as the services take it)."""
    return run_memory(snapshot_of(text.encode("utf-8"), False), nonce=nonce)


def run_context(
    workspace: Workspace,
    identity: RunIdentity = CTX,
    *,
    system_prompt: str = "",
    memory: RunMemory | None = None,
    subagents: RunSubagent | None = None,
) -> RunContext:
    """A run's context as the runtime builds it (the workspace must be the identity's user's)."""
    return RunContext(identity, workspace, system_prompt, memory=memory, subagents=subagents)


def forged_context(
    identity: object,
    workspace: object,
    *,
    system_prompt: str = "",
    memory: RunMemory | None = None,
    subagents: RunSubagent | None = None,
) -> RunContext:
    """A RunContext that skips construction's checks: what a forged context would carry."""
    forged = object.__new__(RunContext)
    values = {
        "identity": identity,
        "workspace": workspace,
        "system_prompt": system_prompt,
        "memory": memory,
        "subagents": subagents,
    }
    for name, value in values.items():
        object.__setattr__(forged, name, value)
    return forged


async def chatbot_run(
    workspace: Workspace,
    memory: FakeMemory,
    model: BaseChatModel,
    *,
    identity: RunIdentity = CTX,
    base_prompt: str = "You are Yuxi.",
    subagents: RunSubagent | None = None,
    checkpointer: Checkpointer | None = None,
) -> tuple[AgentGraph, RunContext]:
    """What the runtime's assembly does for one run, without a database: the shared context,
    the memory switch and snapshot read as the run starts, the chatbot graph for that switch
    (compiled here; the runtime takes it from its cache) and the run context to invoke it with."""
    agent_input = await build_agent_input_context(
        workspace=workspace, identity=identity, base_prompt=base_prompt
    )
    snapshot = await memory.load_memory_snapshot(identity.uid)
    context = RunContext(
        identity,
        workspace,
        agent_input.system_prompt,
        memory=None if snapshot is None else run_memory(snapshot),
        subagents=subagents,
    )
    graph = compile_chatbot_graph(
        model=model,
        memory=memory,
        lookback=memory,
        files=memory,
        memory_on=snapshot is not None,
        delegate=subagents is not None,
        checkpointer=checkpointer if checkpointer is not None else InMemorySaver(),
    )
    return graph, context


class ChatRun:
    """A compiled chatbot graph and the run context its run is invoked with."""

    def __init__(self, graph: AgentGraph, context: RunContext) -> None:
        self.graph = graph
        self.context = context

    async def ainvoke(self, value: Any, config: Any, *, context: Any) -> Any:
        return await self.graph.ainvoke(value, config, context=context)


async def chat_run(
    workspace: Workspace,
    memory: FakeMemory,
    model: BaseChatModel,
    *,
    base_prompt: str = "You are Yuxi.",
    checkpointer: Checkpointer | None = None,
) -> ChatRun:
    graph, context = await chatbot_run(
        workspace, memory, model, base_prompt=base_prompt, checkpointer=checkpointer
    )
    return ChatRun(graph, context)
