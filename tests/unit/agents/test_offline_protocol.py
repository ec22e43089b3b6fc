"""The offline model as a LangChain chat model: ``tool_choice``, refused keywords, streaming,
usage, stop sequences, ``max_tokens`` and its LangSmith parameters."""

from __future__ import annotations

import math
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langchain_core.tools import BaseTool, tool
from pydantic import ValidationError

from yuxi.agents.middlewares.tool_call_integrity import COMPLETE_FINISH_REASONS
from yuxi.agents.models import OfflineChatModel


@tool
def remember_memory(content: str, replaces: str | None = None) -> str:
    """Remember."""
    return content


@tool
def add_numbers(a: int, b: int, label: str, exact: bool, unit: str = "m") -> str:
    """Add two numbers."""
    return f"{a + b}"


def _invoke(runnable: Any, text: str, **kwargs: Any) -> AIMessage:
    reply = runnable.invoke([HumanMessage(content=text)], **kwargs)
    assert isinstance(reply, AIMessage)
    return reply


def _stream(model: Any, text: str) -> list[AIMessageChunk]:
    chunks = list(model.stream([HumanMessage(content=text)]))
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    return chunks


def _sum(chunks: list[AIMessageChunk]) -> AIMessageChunk:
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    return total


# -- tool_choice -----------------------------------------------------------------------------


def test_none_forbids_every_call_even_for_a_command() -> None:
    model = OfflineChatModel().bind_tools([remember_memory], tool_choice="none")
    reply = _invoke(model, "remember: tea")
    assert reply.tool_calls == [] and "cannot" in reply.text
    assert reply.response_metadata["finish_reason"] == "stop"


@pytest.mark.parametrize("choice", [None, "auto"])
def test_auto_calls_for_commands_only(choice: str | None) -> None:
    model = OfflineChatModel().bind_tools([remember_memory, add_numbers], tool_choice=choice)
    assert _invoke(model, "remember: tea").tool_calls[0]["args"] == {"content": "tea"}
    assert _invoke(model, "add_numbers(1, 2)").tool_calls == []


@pytest.mark.parametrize("choice", ["any", "required"])
def test_any_forces_a_call_and_keeps_a_commands_own_call(choice: str) -> None:
    model = OfflineChatModel().bind_tools([remember_memory, add_numbers], tool_choice=choice)
    assert _invoke(model, "remember: tea").tool_calls[0]["name"] == "remember_memory"
    (call,) = _invoke(model, "hello").tool_calls
    assert (call["name"], call["args"]) == ("remember_memory", {"content": "hello"})


@pytest.mark.parametrize(
    "choice", ["add_numbers", {"type": "function", "function": {"name": "add_numbers"}}]
)
def test_a_named_tool_is_the_only_one_called(choice: str | dict[str, Any]) -> None:
    model = OfflineChatModel().bind_tools([remember_memory, add_numbers], tool_choice=choice)
    for text in ("remember: tea", "hello", "remember_memory(tea)"):
        (call,) = _invoke(model, text).tool_calls
        assert call["name"] == "add_numbers"


def test_a_forced_call_takes_written_arguments_or_fills_the_required_ones() -> None:
    model = OfflineChatModel().bind_tools([add_numbers], tool_choice="any")
    (written,) = _invoke(model, 'Please: add_numbers(3, b=4, label="x y", exact=true)').tool_calls
    assert written["args"] == {"a": 3, "b": 4, "label": "x y", "exact": True}
    (filled,) = _invoke(model, "What is 12 plus 30?").tool_calls
    # numbers in order, strings get the message, booleans false, optional ones left out
    assert filled["args"] == {"a": 12, "b": 30, "label": "What is 12 plus 30?", "exact": False}
    # deterministic, call id included
    assert _invoke(model, "What is 12 plus 30?").tool_calls == [filled]


@pytest.mark.parametrize(
    ("tools", "choice", "error"),
    [
        ([remember_memory], "add_numbers", "not a bound tool"),
        ([], "any", "needs at least one bound tool"),
        ([remember_memory], {"type": "tool", "name": "remember_memory"}, "unsupported"),
        ([remember_memory], 3, "unsupported"),
    ],
)
def test_an_impossible_tool_choice_is_refused(
    tools: list[BaseTool], choice: Any, error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        OfflineChatModel().bind_tools(tools, tool_choice=choice)


def test_unknown_keywords_are_refused_not_dropped() -> None:
    with pytest.raises(TypeError, match="parallel_tool_calls"):
        OfflineChatModel().bind_tools([remember_memory], parallel_tool_calls=False)
    with pytest.raises(TypeError, match="strict"):
        OfflineChatModel().bind_tools([remember_memory], strict=True)
    with pytest.raises(TypeError, match="seed"):
        OfflineChatModel().invoke("hi", seed=1)


@pytest.mark.parametrize(
    "settings", [{"timeout": 60}, {"max_retries": 2}, {"api_key": "k"}, {"temperature": 0.7}]
)
def test_settings_it_cannot_honour_are_refused(settings: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        OfflineChatModel(**settings)


# -- streaming -------------------------------------------------------------------------------


def test_text_streams_in_pieces_and_adds_up_to_the_invoke_reply() -> None:
    model = OfflineChatModel()
    text = "please stream this sentence in several pieces 请分几块"
    chunks = _stream(model, text)
    whole = _invoke(model, text)
    assert len([c for c in chunks if c.content]) >= 5
    assert [c.chunk_position for c in chunks] == [None] * (len(chunks) - 1) + ["last"]
    # only the last chunk says why it ended and what it used (usage is summed when added up)
    assert [bool(c.usage_metadata) for c in chunks] == [False] * (len(chunks) - 1) + [True]
    assert all("finish_reason" not in c.response_metadata for c in chunks[:-1])
    total = _sum(chunks)
    assert total.content == whole.content
    assert total.usage_metadata == whole.usage_metadata
    assert total.response_metadata == whole.response_metadata
    assert whole.response_metadata == {"finish_reason": "stop", "model_name": "yuxi-offline"}


def test_a_tool_call_streams_as_tool_call_chunks() -> None:
    model = OfflineChatModel().bind_tools([remember_memory])
    chunks = _stream(model, "remember: 我喜欢乌龙茶")
    assert sum(len(c.tool_call_chunks) for c in chunks) >= 2
    total = _sum(chunks)
    whole = _invoke(model, "remember: 我喜欢乌龙茶")
    assert total.tool_calls == whole.tool_calls
    assert total.tool_calls[0]["args"] == {"content": "我喜欢乌龙茶"}
    assert total.invalid_tool_calls == []
    # the tool-call integrity middleware runs calls only from a complete response
    for message in (total, whole):
        assert message.response_metadata["finish_reason"] == "tool_calls"
        assert message.response_metadata["finish_reason"] in COMPLETE_FINISH_REASONS


async def test_async_stream_matches_sync_stream() -> None:
    model = OfflineChatModel().bind_tools([remember_memory])
    messages = [HumanMessage(content="remember: tea")]

    def shape(chunk: object) -> tuple[Any, ...]:
        assert isinstance(chunk, AIMessageChunk)
        return (chunk.content, chunk.tool_call_chunks, chunk.chunk_position, chunk.usage_metadata)

    sync = [shape(c) for c in model.stream(messages)]
    assert [shape(c) async for c in model.astream(messages)] == sync


# -- usage, stop, max_tokens, LangSmith ----------------------------------------------------------


def _tokens(text: str) -> int:
    return math.ceil(len(text.encode("utf-8")) / 4)


def test_usage_is_a_documented_deterministic_count() -> None:
    reply = _invoke(OfflineChatModel(), "你好")
    assert reply.text == "You said: 你好"
    assert reply.usage_metadata == {
        "input_tokens": _tokens("你好"),
        "output_tokens": _tokens("You said: 你好"),
        "total_tokens": _tokens("你好") + _tokens("You said: 你好"),
    }
    # bound tools are part of the input, as with providers
    bound = _invoke(OfflineChatModel().bind_tools([remember_memory]), "你好")
    assert bound.usage_metadata is not None
    assert bound.usage_metadata["input_tokens"] > reply.usage_metadata["input_tokens"]
    call = _invoke(OfflineChatModel().bind_tools([remember_memory]), "remember: tea")
    assert call.usage_metadata is not None
    assert call.usage_metadata["output_tokens"] == _tokens('remember_memory{"content": "tea"}')


def test_stop_sequences_and_max_tokens_cut_the_text() -> None:
    stopped = _invoke(OfflineChatModel(stop=["you"]), "are you there")
    assert stopped.text == "You said: are "
    assert stopped.response_metadata["finish_reason"] == "stop"
    assert _invoke(OfflineChatModel(), "are you there", stop=["there"]).text == "You said: are you "
    cut = _invoke(OfflineChatModel(max_tokens=3), "one two three four")
    assert cut.text == "You said: on" and cut.response_metadata["finish_reason"] == "length"
    assert cut.usage_metadata is not None and cut.usage_metadata["output_tokens"] == 3
    chunks = _stream(OfflineChatModel(max_tokens=3), "one two three four")
    assert _sum(chunks).content == "You said: on"
    per_call = _invoke(OfflineChatModel(), "one two three four", max_tokens=2)
    assert per_call.text == "You said"
    # a tool call is never cut
    call = _invoke(OfflineChatModel(max_tokens=1).bind_tools([remember_memory]), "remember: tea")
    assert call.tool_calls and call.response_metadata["finish_reason"] == "tool_calls"


def test_langsmith_params_and_model_override() -> None:
    model = OfflineChatModel(max_tokens=50, stop=["x"], temperature=0)
    assert model._get_ls_params() == {
        "ls_provider": "yuxi",
        "ls_model_name": "yuxi-offline",
        "ls_model_type": "chat",
        "ls_temperature": 0,
        "ls_max_tokens": 50,
        "ls_stop": ["x"],
    }
    assert model._get_ls_params(model="other")["ls_model_name"] == "other"
    renamed = _invoke(OfflineChatModel.model_validate({"model": "offline-b"}), "hi")
    assert renamed.response_metadata["model_name"] == "offline-b"
    override = _invoke(OfflineChatModel(), "hi", model="offline-c")
    assert override.response_metadata["model_name"] == "offline-c"


def test_max_tokens_boundary_in_utf8_bytes_with_cjk() -> None:
    model = OfflineChatModel(max_tokens=4)  # 16 bytes of text
    whole = _invoke(model, "茶茶")  # "You said: 茶茶": exactly 16 bytes
    assert whole.text == "You said: 茶茶" and whole.response_metadata["finish_reason"] == "stop"
    over = _invoke(model, "茶茶a")  # 17 bytes: one byte more
    assert over.text == "You said: 茶茶" and over.response_metadata["finish_reason"] == "length"
    mid = _invoke(model, "a茶茶")  # the 16th byte is inside a character: never half of one
    assert mid.text == "You said: a茶" and mid.response_metadata["finish_reason"] == "length"


def test_tools_passed_per_call_are_read_like_bound_ones() -> None:
    direct = _invoke(OfflineChatModel(), "remember: tea", tools=[remember_memory])
    bound = _invoke(OfflineChatModel().bind_tools([remember_memory]), "remember: tea")
    assert direct.tool_calls == bound.tool_calls
    assert direct.usage_metadata == bound.usage_metadata
