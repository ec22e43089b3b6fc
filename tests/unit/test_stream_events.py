"""The pure translation of a LangGraph chatbot stream into run records."""

from __future__ import annotations

from types import SimpleNamespace

from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage

from yuxi.runtime.stream_events import (
    TOKEN_FLUSH_CHARS,
    AssistantReplied,
    InterruptRequested,
    StreamTranslator,
    TokenText,
    ToolCallsProposed,
    ToolFinished,
    message_text,
)
from yuxi.services.runs.service import ProposedToolCall, ToolOutcome


def _token(text: str, agent: str | None = "chatbot") -> tuple[str, object]:
    metadata = {} if agent is None else {"lc_agent_name": agent}
    return "messages", (AIMessageChunk(content=text), metadata)


def _update(node: str, *messages: object) -> tuple[str, object]:
    return "updates", {node: {"messages": list(messages)}}


def test_a_model_calls_first_text_is_recorded_at_once() -> None:
    t = StreamTranslator()
    assert t.feed(*_token("")) == []  # no text yet: nothing to show
    assert t.feed(*_token("你")) == [TokenText("你")]
    assert t.feed(*_token("好")) == []  # then buffered
    call = AIMessage(content="你好", id="m0", tool_calls=[{"id": "c1", "name": "t", "args": {}}])
    proposed = ToolCallsProposed("你好", (ProposedToolCall(tool_call_id="c1", name="t", args={}),))
    assert t.feed(*_update("model", call)) == [TokenText("好"), proposed]
    # the next model call (after a step's update) shows its first text at once too
    assert t.feed(*_token("再")) == [TokenText("再")]
    assert t.feed(*_token("见")) == []


def test_tokens_are_buffered_until_the_flush_size_then_flushed_by_an_update() -> None:
    t = StreamTranslator()
    assert t.feed(*_token("first")) == [TokenText("first")]
    assert t.feed(*_token("a" * (TOKEN_FLUSH_CHARS - 1))) == []
    assert t.feed(*_token("b")) == [TokenText("a" * (TOKEN_FLUSH_CHARS - 1) + "b")]
    assert t.feed(*_token("tail")) == []
    reply = AIMessage(content="done", id="m1")
    # buffered tokens come first, then the update's records: the order the model made them
    assert t.feed(*_update("model", reply)) == [TokenText("tail"), AssistantReplied("done")]
    assert t.flush() == []


def test_subagent_tokens_and_non_ai_chunks_are_skipped() -> None:
    t = StreamTranslator()
    assert t.feed(*_token("from the child", agent="subagent")) == []
    assert t.feed("messages", (ToolMessage(content="x", tool_call_id="c"), {})) == []
    assert t.feed(*_token("untagged", agent=None)) == [TokenText("untagged")]
    assert t.feed(*_token(" more", agent=None)) == []
    assert t.flush() == [TokenText(" more")]


def test_tool_calls_results_and_reply() -> None:
    t = StreamTranslator()
    ask = AIMessage(
        content="",
        id="m1",
        tool_calls=[{"id": "c1", "name": "remember_memory", "args": {"content": "tea"}}],
    )
    ok = ToolMessage(content='{"status":"updated"}', tool_call_id="c1", name="remember_memory")
    assert t.feed(*_update("model", ask)) == [
        ToolCallsProposed("", (ProposedToolCall("c1", "remember_memory", {"content": "tea"}),))
    ]
    assert t.feed(*_update("tools", ok)) == [
        ToolFinished(ToolOutcome("c1", "remember_memory", '{"status":"updated"}', "success"))
    ]


def test_the_tool_message_status_is_the_truth_never_its_content() -> None:
    t = StreamTranslator()
    looks_failed = ToolMessage(content='{"status":"error","code":"x"}', tool_call_id="a", name="n")
    failed = ToolMessage(content="all fine", tool_call_id="b", name="n", status="error")
    assert [e.outcome.status for e in t.feed(*_update("tools", looks_failed, failed))] == [  # type: ignore[union-attr]
        "success",
        "error",
    ]


def test_messages_already_checkpointed_or_seen_are_recorded_once() -> None:
    t = StreamTranslator(seen_message_ids=["old"])
    old = AIMessage(content="from an earlier run", id="old")
    new = AIMessage(content="new", id="new")
    human = HumanMessage(content="hi", id="h")
    assert t.feed(*_update("model", old, human, new)) == [AssistantReplied("new")]
    assert t.feed(*_update("model", new)) == []


def test_interrupts_are_jsonable() -> None:
    t = StreamTranslator()
    one = SimpleNamespace(value={"action_requests": [{"name": "write_workspace_file"}]})
    assert t.feed("updates", {"__interrupt__": (one,)}) == [
        InterruptRequested({"action_requests": [{"name": "write_workspace_file"}]})
    ]
    two = (SimpleNamespace(value={"a": object()}), SimpleNamespace(value=2))
    (event,) = t.feed("updates", {"__interrupt__": two})
    assert isinstance(event, InterruptRequested)
    assert event.request["interrupts"][1] == 2
    assert isinstance(event.request["interrupts"][0]["a"], str)


def test_other_modes_and_shapes_are_ignored() -> None:
    t = StreamTranslator()
    assert t.feed("custom", {"x": 1}) == []
    assert t.feed("updates", "not a dict") == []
    assert t.feed("updates", {"node": None}) == []


def test_message_text_joins_text_blocks() -> None:
    message = AIMessage(content=["a", {"type": "text", "text": "b"}, {"type": "image_url"}])
    assert message_text(message) == "ab"
