"""The runtime's graph cache: one compiled graph per configuration, owned by its runtime."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import ToolNode

from tests.support.agent_fakes import CapturingModel, FakeMemory, SpyWorkspace
from yuxi.agents.graphs import AgentGraph
from yuxi.agents.middlewares.memory import MEMORY_TOOL_NAMES
from yuxi.agents.tools.delegate import DELEGATE_TOOL_NAME
from yuxi.runtime.agent_runtime import AgentRuntime, RunLimits
from yuxi.runtime.graph_cache import GraphCache


def _runtime() -> AgentRuntime:
    return AgentRuntime(
        model=CapturingModel(), checkpointer=InMemorySaver(), limits=RunLimits(8, 8, 60.0)
    )


def _memory(tmp_path: Path) -> FakeMemory:
    ws = SpyWorkspace(tmp_path / "workspaces")
    ws.ensure_user_workspace_sync()
    return FakeMemory(ws)


def _chatbot(
    runtime: AgentRuntime,
    memory: FakeMemory,
    *,
    memory_on: bool = True,
    delegate: bool = True,
    tool_calls: int | None = 8,
) -> AgentGraph:
    return runtime.graphs.chatbot(
        model=runtime.model,
        memory=memory,
        lookback=memory,
        files=memory,
        checkpointer=runtime.checkpointer,
        memory_on=memory_on,
        delegate=delegate,
        model_call_limit=runtime.limits.model_calls,
        tool_call_limit=tool_calls,
    )


def _tool_names(graph: AgentGraph) -> set[str]:
    node = graph.nodes["tools"].bound
    assert isinstance(node, ToolNode)
    return set(node.tools_by_name)


def test_same_configuration_same_graph_memory_switch_another(tmp_path: Path) -> None:
    runtime, memory = _runtime(), _memory(tmp_path)
    on = _chatbot(runtime, memory)
    assert _chatbot(runtime, memory) is on
    off = _chatbot(runtime, memory, memory_on=False)
    assert off is not on
    assert _chatbot(runtime, memory, memory_on=False) is off
    assert len(runtime.graphs) == 2
    # What the switch changes: the memory tools exist only in the memory-on graph.
    assert set(MEMORY_TOOL_NAMES) <= _tool_names(on)
    assert _tool_names(off).isdisjoint(MEMORY_TOOL_NAMES)


def test_every_shape_and_binding_is_its_own_entry(tmp_path: Path) -> None:
    runtime, memory = _runtime(), _memory(tmp_path)
    on = _chatbot(runtime, memory)
    without_delegate = _chatbot(runtime, memory, delegate=False)
    assert without_delegate is not on
    assert DELEGATE_TOOL_NAME in _tool_names(on)
    assert DELEGATE_TOOL_NAME not in _tool_names(without_delegate)
    assert _chatbot(runtime, memory, tool_calls=9) is not on
    assert _chatbot(runtime, _memory(tmp_path / "other")) is not on  # other services
    other_model = replace(runtime, model=CapturingModel())
    assert _chatbot(other_model, memory) is not on
    other_saver = replace(runtime, checkpointer=InMemorySaver())
    assert _chatbot(other_saver, memory) is not on


def test_each_runtime_owns_its_cache(tmp_path: Path) -> None:
    first, memory = _runtime(), _memory(tmp_path)
    _chatbot(first, memory)
    assert len(first.graphs) == 1
    second = _runtime()
    copy = replace(first)
    assert isinstance(second.graphs, GraphCache) and len(second.graphs) == 0
    assert copy.graphs is not first.graphs and len(copy.graphs) == 0


def test_subagent_graph_is_cached_and_has_no_memory(tmp_path: Path) -> None:
    runtime = _runtime()
    limits = runtime.limits
    sub = runtime.graphs.subagent(
        model=runtime.model, model_call_limit=limits.model_calls, tool_call_limit=limits.tool_calls
    )
    again = runtime.graphs.subagent(
        model=runtime.model, model_call_limit=limits.model_calls, tool_call_limit=limits.tool_calls
    )
    assert again is sub
    assert _tool_names(sub) == {"read_workspace_file"}
