"""Full create_agent runs with the offline model: chatbot, approval + resume, SubAgent."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from tests.support.agent_fakes import CTX, CapturingModel, FakeMemory, SpyWorkspace
from tests.support.run_contexts import chatbot_run, run_context
from yuxi.agents.context import RunContext, RunSubagent, build_agent_input_context
from yuxi.agents.graphs import AgentGraph, compile_subagent_graph
from yuxi.agents.middlewares.memory import MEMORY_TOOL_NAMES
from yuxi.agents.prompts import MEMORY_OFF_NOTE
from yuxi.agents.tools.delegate import SubagentReply
from yuxi.services.memory.service import MemoryWriteResult
from yuxi.workspace.filesystem import AGENTS_PATH, MEMORY_PATH

MARKER = "UNIQUE-MEMORY-MARKER-41c7e2"


def _workspace(tmp_path: Path, memory_text: str = "- likes green tea\n") -> SpyWorkspace:
    ws = SpyWorkspace(tmp_path / "workspaces")
    ws.ensure_user_workspace_sync()
    ws.put(MEMORY_PATH, memory_text)
    ws.put(AGENTS_PATH, "Be brief.")
    return ws


@dataclass
class _Chat:
    """A compiled chatbot graph and the run context its run is invoked with."""

    graph: AgentGraph
    context: RunContext

    async def ainvoke(self, value: Any, config: RunnableConfig, context: Any = None) -> Any:
        return await self.graph.ainvoke(value, config, context=context or self.context)


async def _chatbot(
    ws: SpyWorkspace,
    memory: FakeMemory,
    model: CapturingModel,
    *,
    subagents: RunSubagent | None = None,
    saver: InMemorySaver | None = None,
) -> _Chat:
    graph, context = await chatbot_run(
        ws, memory, model, subagents=subagents, checkpointer=saver or InMemorySaver()
    )
    return _Chat(graph, context)


def _config(thread: str = "thread-a") -> RunnableConfig:
    return {"configurable": {"thread_id": thread}}


async def _say(chat: _Chat, text: str, thread: str = "thread-a", context: Any = None) -> Any:
    return await chat.ainvoke({"messages": [HumanMessage(content=text)]}, _config(thread), context)


def _final(result: dict[str, Any]) -> AIMessage:
    last = result["messages"][-1]
    assert isinstance(last, AIMessage)
    return last


def _tool_messages(result: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


# -- chatbot with memory on ---------------------------------------------------------------------


async def test_remember_calls_the_service_with_the_run_identity(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    # The service's answer is scripted: this test is about what reaches it and what comes back.
    memory = FakeMemory(
        ws, remember_result=MemoryWriteResult("updated", "/agents/MEMORY.md", 19, 1, 1)
    )
    model = CapturingModel()
    graph = await _chatbot(ws, memory, model)
    result = await _say(graph, "remember: 我喜欢乌龙茶")

    assert memory.calls_to("remember_memory") == [
        {
            "uid": CTX.uid,
            "thread_id": CTX.thread_id,
            "run_id": CTX.run_id,
            "request_id": CTX.request_id,
            "worker_id": CTX.worker_id,
            "content": "我喜欢乌龙茶",
            "replaces": None,
            "tool_call_id": _tool_messages(result)[0].tool_call_id,
        }
    ]
    (tool_message,) = _tool_messages(result)
    assert tool_message.name == "remember_memory" and tool_message.tool_call_id
    expected = json.dumps(
        {
            "status": "updated",
            "path": "/agents/MEMORY.md",
            "size": 19,
            "start_line": 1,
            "end_line": 1,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )
    assert tool_message.content == expected
    # The answer says it in words; the JSON is the tool card's.
    assert _final(result).text == "Saved to memory: «我喜欢乌龙茶»"
    assert "__interrupt__" not in result  # remember_memory needs no approval
    assert graph.context.memory is not None
    assert graph.context.memory.snapshot.text == "- likes green tea\n"
    assert set(MEMORY_TOOL_NAMES) <= set(model.bindings[0])


async def test_recall_answers_from_the_memory_block(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, f"- likes green tea\n- {MARKER}\n")
    model = CapturingModel()
    graph = await _chatbot(ws, FakeMemory(ws), model)

    answer = _final(await _say(graph, "what do you remember?")).text
    assert "- likes green tea" in answer and MARKER in answer
    zh = _final(await _say(graph, "你记得什么？", thread="thread-b")).text
    assert MARKER in zh
    # The memory block is in every model call's system prompt, after the shared context.
    prompts = model.system_prompts()
    assert len(prompts) == 2
    for prompt in prompts:
        assert prompt.startswith("You are Yuxi.")
        assert prompt.index("Be brief.") < prompt.index('<memory_data nonce="')
        assert prompt.count('</memory_data nonce="') == 1


async def test_correct_search_and_read_reach_the_service(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    memory = FakeMemory(ws)
    graph = await _chatbot(ws, memory, CapturingModel())

    await _say(graph, "纠正记忆：likes green tea => likes black tea")
    await _say(graph, "search history: 绿茶")
    result = await _say(graph, "read thread: thread-old at 7 with tools")

    (remember,) = memory.calls_to("remember_memory")
    assert (remember["content"], remember["replaces"]) == ("likes black tea", "likes green tea")
    assert memory.calls_to("search_thread_messages") == [
        {
            "uid": CTX.uid,
            "query": "绿茶",
            "limit": 5,
            "after": None,
            "before": None,
            "thread_id": None,
            "current_run_id": CTX.run_id,
        }
    ]
    assert memory.calls_to("read_thread_messages") == [
        {
            "uid": CTX.uid,
            "thread_id": "thread-old",
            "message_id": 7,
            "limit": 20,
            "include_tools": True,
        }
    ]
    (read,) = [m for m in _tool_messages(result) if m.name == "read_thread_messages"]
    assert json.loads(str(read.content))["thread_id"] == "thread-old"
    assert _final(result).text == "Thread «Untitled»:\n- you: hello"


async def test_forged_invoke_context_is_refused(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    memory = FakeMemory(ws)
    graph = await _chatbot(ws, memory, CapturingModel())
    # A SubAgent's identity (no lease) in an otherwise complete run context with memory.
    forged = replace(graph.context, identity=replace(CTX, worker_id=None))

    result = await _say(graph, "remember: x", context=forged)

    assert memory.calls_to("remember_memory") == []
    (tool_message,) = _tool_messages(result)
    assert json.loads(str(tool_message.content))["code"] == "unauthorized_run"


# -- chatbot with memory off --------------------------------------------------------------------


async def test_memory_off_binds_no_memory_tool_and_reads_no_memory(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, f"- {MARKER}\n")
    ws.forbid_memory_reads = True
    memory = FakeMemory(ws, enabled=False)
    model = CapturingModel()
    graph = await _chatbot(ws, memory, model)
    remembered = _final(await _say(graph, "remember: X"))
    recalled = _final(await _say(graph, "what do you remember?"))
    read = await _say(graph, "read file: agents/MEMORY.md")

    assert remembered.tool_calls == []
    # the model is told memory is off (not that it is empty) and says so, pointing to the switch
    assert remembered.text == recalled.text
    assert "memory is off" in recalled.text and "Memory switch" in recalled.text
    assert "no saved memory" not in recalled.text
    assert all(p.endswith(MEMORY_OFF_NOTE) for p in model.system_prompts())
    assert json.loads(str(_tool_messages(read)[0].content))["code"] == "forbidden_path"
    for names in model.bindings:
        assert set(names).isdisjoint(MEMORY_TOOL_NAMES)
        assert "read_workspace_file" in names
    assert memory.calls_to("remember_memory") == []
    assert ws.memory_reads == []
    assert graph.context.memory is None
    assert MARKER not in model.all_text()
    assert all("memory_data" not in p for p in model.system_prompts())


# -- approval and resume ------------------------------------------------------------------------


async def test_write_interrupts_and_approval_writes_the_file(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    graph = await _chatbot(ws, FakeMemory(ws), CapturingModel())

    paused = await _say(graph, "write file notes/plan.md: 周一开会")

    (interrupt,) = paused["__interrupt__"]
    (action,) = interrupt.value["action_requests"]
    assert action["name"] == "write_workspace_file"
    assert action["args"] == {"path": "notes/plan.md", "content": "周一开会"}
    # Only what the resume API accepts is offered.
    assert interrupt.value["review_configs"][0]["allowed_decisions"] == ["approve", "reject"]
    assert ws.get("notes/plan.md") is None
    assert ws.writes == []

    resumed = await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), _config())

    assert "__interrupt__" not in resumed
    assert ws.get("notes/plan.md") == "周一开会"
    written = '{"status":"written","path":"notes/plan.md","size":12}'
    assert [m.content for m in _tool_messages(resumed)] == [written]
    assert _final(resumed).text == "Wrote notes/plan.md (12 bytes)."


async def test_rejection_does_not_write(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    graph = await _chatbot(ws, FakeMemory(ws), CapturingModel())

    await _say(graph, "write file notes/plan.md: nope")
    resumed = await graph.ainvoke(
        Command(resume={"decisions": [{"type": "reject", "message": "not now"}]}),
        _config(),
    )

    assert ws.get("notes/plan.md") is None
    assert ws.writes == []
    final = _final(resumed).text
    assert "did not succeed" in final and "not now" in final


async def test_approved_memory_write_goes_through_the_memory_writer(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    memory = FakeMemory(ws)
    graph = await _chatbot(ws, memory, CapturingModel())

    paused = await _say(graph, "write file agents/MEMORY.md: - fresh start")
    assert "__interrupt__" in paused
    await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), _config())

    (call,) = memory.calls_to("agent_write_memory_file")
    assert {k: call[k] for k in ("uid", "run_id", "data", "if_match")} == {
        "uid": CTX.uid,
        "run_id": CTX.run_id,
        "data": b"- fresh start",
        "if_match": None,
    }
    assert call["tool_call_id"]  # the approved tool call's id, passed through for provenance
    assert ws.get(MEMORY_PATH) == "- fresh start"


# -- delegation and the SubAgent ----------------------------------------------------------------


async def test_delegation_runs_the_subagent_without_memory(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, f"- {MARKER}\n")
    ws.put("notes.md", "the notes")
    sub_model = CapturingModel()
    sub_contexts: list[Any] = []

    async def run_subagent(task: str) -> SubagentReply:
        sub_ctx = replace(CTX, thread_id="child-1", run_id="run-child", worker_id=None)
        sub_contexts.append(sub_ctx)
        sub_input = await build_agent_input_context(
            workspace=ws, identity=sub_ctx, base_prompt="You are a SubAgent."
        )
        sub_graph = compile_subagent_graph(model=sub_model)
        ws.forbid_memory_reads = True
        try:
            out = await sub_graph.ainvoke(
                {"messages": [HumanMessage(content=task)]},
                context=run_context(ws, sub_ctx, system_prompt=sub_input.system_prompt),
            )
        finally:
            ws.forbid_memory_reads = False
        return SubagentReply(reply=_final(out).text)

    main_model = CapturingModel()
    graph = await _chatbot(ws, FakeMemory(ws), main_model, subagents=run_subagent)
    result = await _say(graph, "delegate: read file: notes.md")

    assert sub_contexts and sub_contexts[0].worker_id is None
    assert "the notes" in _final(result).text
    assert sub_model.bindings and set(sub_model.bindings) == {("read_workspace_file",)}
    assert MARKER not in sub_model.all_text()
    assert "delegate_to_subagent" in main_model.bindings[0]


async def test_subagent_never_sees_memory_in_any_prompt(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, f"- {MARKER}\n</memory_data>\n")
    ws.forbid_memory_reads = True
    sub_ctx = replace(CTX, thread_id="child-1", run_id="run-child", worker_id=None)
    sub_input = await build_agent_input_context(
        workspace=ws, identity=sub_ctx, base_prompt="You are a SubAgent."
    )
    model = CapturingModel()
    graph = compile_subagent_graph(model=model, checkpointer=InMemorySaver())
    sub_run = run_context(ws, sub_ctx, system_prompt=sub_input.system_prompt)

    outputs: list[BaseMessage] = []
    for text in (
        "what do you remember?",
        "remember: leak",
        "search history: tea",
        "read thread: thread-a",
        "read file: agents/MEMORY.md",
        "read file: /agents/MEMORY.md",
        "write file agents/MEMORY.md: overwrite",
        "delegate: recurse",
    ):
        out = await graph.ainvoke(
            {"messages": [HumanMessage(content=text)]}, _config("child-1"), context=sub_run
        )
        outputs.extend(out["messages"])

    assert model.bindings and all(names == ("read_workspace_file",) for names in model.bindings)
    assert MARKER not in model.all_text()
    assert all(MARKER not in str(m.content) for m in outputs)
    assert all("memory_data" not in p for p in model.system_prompts())
    assert model.system_prompts()[0].startswith("You are a SubAgent.")
    assert ws.memory_reads == []
    assert ws.writes == []
    forbidden = [m for m in outputs if isinstance(m, ToolMessage)]
    assert forbidden and all('"forbidden_path"' in str(m.content) for m in forbidden)


async def test_subagent_state_stays_out_of_the_parent_checkpoint(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    fake = FakeMemory(ws)
    saver = InMemorySaver()

    async def run_subagent(task: str) -> SubagentReply:
        sub_ctx = run_context(ws, replace(CTX, thread_id="child-1", worker_id=None))
        sub_graph = compile_subagent_graph(model=CapturingModel())
        out = await sub_graph.ainvoke({"messages": [HumanMessage(content=task)]}, context=sub_ctx)
        return SubagentReply(reply=_final(out).text)

    graph = await _chatbot(ws, fake, CapturingModel(), subagents=run_subagent, saver=saver)
    result = await _say(graph, "delegate: hello child")

    assert "You said: hello child" in _final(result).text
    namespaces = {ns for thread in saver.storage.values() for ns in thread}
    assert namespaces == {""}  # only the parent's own checkpoints
