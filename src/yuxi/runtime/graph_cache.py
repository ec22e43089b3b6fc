"""The compiled agent graphs of one :class:`~yuxi.runtime.agent_runtime.AgentRuntime`.

Compiling a LangChain agent (``create_agent``: the tools, the middleware, ``StateGraph.compile``)
is the same work for every run of one configuration, so each configuration is compiled once and
the graph shared. A configuration is what changes a graph's shape or what it is bound to: the
model object, the checkpointer, the services its tools write through, the memory switch (which
tools and middleware exist), the delegate tool, the run limits. Nothing of a run is in a graph:
each invocation brings its own :class:`~yuxi.agents.context.RunContext`, from which the prompt,
the memory block, the identity and the workspace are read per call.

The cache belongs to its runtime (never module-global), so every process and every test has its
own. It holds at most one graph per configuration, and a runtime has a handful of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from yuxi.agents.graphs import AgentGraph, compile_chatbot_graph, compile_subagent_graph
from yuxi.agents.trace_hooks import keep_untraced_hooks_on_the_loop

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from yuxi.agents.ports import LookbackPort, MemoryPort, WorkspaceFilesPort

__all__ = ["GraphCache"]


class GraphCache:
    def __init__(self) -> None:
        # The graphs' middleware hooks are LangSmith-traceable (create_agent wraps them): keep
        # their untraced bookkeeping off the thread pool in this process (process-wide, once is
        # enough, again is harmless).
        keep_untraced_hooks_on_the_loop()
        # Keyed by identity of the objects a graph is bound to; each entry keeps those objects
        # alive, so an id in a live key is never reused by another object.
        self._graphs: dict[tuple[object, ...], tuple[tuple[object, ...], AgentGraph]] = {}

    def __len__(self) -> int:
        return len(self._graphs)

    def _get(
        self, kind: str, bound: tuple[object, ...], shape: tuple[object, ...], compile: Any
    ) -> AgentGraph:
        key = (kind, *(id(thing) for thing in bound), *shape)
        entry = self._graphs.get(key)
        if entry is None:
            entry = self._graphs[key] = (bound, compile())
        return entry[1]

    def chatbot(
        self,
        *,
        model: BaseChatModel,
        memory: MemoryPort,
        lookback: LookbackPort,
        files: WorkspaceFilesPort,
        checkpointer: Any,
        memory_on: bool,
        delegate: bool,
        model_call_limit: int | None,
        tool_call_limit: int | None,
    ) -> AgentGraph:
        """The chatbot graph of this configuration, compiled on first use."""
        return self._get(
            "chatbot",
            (model, checkpointer, memory, lookback, files),
            (memory_on, delegate, model_call_limit, tool_call_limit),
            lambda: compile_chatbot_graph(
                model=model,
                memory=memory,
                lookback=lookback,
                files=files,
                memory_on=memory_on,
                delegate=delegate,
                checkpointer=checkpointer,
                model_call_limit=model_call_limit,
                tool_call_limit=tool_call_limit,
            ),
        )

    def subagent(
        self, *, model: BaseChatModel, model_call_limit: int | None, tool_call_limit: int | None
    ) -> AgentGraph:
        """The SubAgent graph of this configuration (never checkpointed), compiled on first use."""
        return self._get(
            "subagent",
            (model,),
            (model_call_limit, tool_call_limit),
            lambda: compile_subagent_graph(
                model=model, model_call_limit=model_call_limit, tool_call_limit=tool_call_limit
            ),
        )
