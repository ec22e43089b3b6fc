"""The pure rules of :mod:`yuxi.agents.middlewares.tool_call_integrity`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from yuxi.agents.middlewares.tool_call_integrity import (
    ToolCallIntegrityMiddleware,
    closing_messages,
    unanswered_calls,
)
from yuxi.errors import ModelOutputTruncated
from yuxi.limits import MODEL_REFUSED_RESPONSES_MAX


def _ai(*ids: str, finish: str | None = "tool_calls", invalid: tuple[str, ...] = ()) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": "t", "args": {"a": 1}, "id": i, "type": "tool_call"} for i in ids],
        invalid_tool_calls=[
            {"type": "invalid_tool_call", "name": "t", "args": "{oops", "id": i, "error": None}
            for i in invalid
        ],
        response_metadata={"finish_reason": finish} if finish else {},
    )


def _answer(call_id: str) -> ToolMessage:
    return ToolMessage(content="ok", tool_call_id=call_id, name="t")


def _respond(history: list[BaseMessage], reply: AIMessage) -> list[BaseMessage]:
    middleware = ToolCallIntegrityMiddleware()
    request = ModelRequest(model=None, messages=history)  # type: ignore[arg-type]
    seen: list[list[Any]] = []

    def handler(req: ModelRequest[Any]) -> ModelResponse[Any]:
        seen.append(list(req.messages))
        return ModelResponse(result=[reply])

    response = middleware.wrap_model_call(request, handler)
    assert isinstance(response, ModelResponse)
    return list(response.result)


def test_unanswered_calls_finds_gaps_anywhere_in_the_history() -> None:
    history: list[BaseMessage] = [
        HumanMessage("a"),
        _ai("c1", "c2"),
        _answer("c1"),
        HumanMessage("b"),
        _ai("c3", invalid=("c4",)),
    ]
    assert [call["id"] for _, call in unanswered_calls(history)] == ["c2", "c3", "c4"]
    # Only the trailing gap can be closed by appending.
    assert [m.tool_call_id for m in closing_messages(history, "why")] == ["c3", "c4"]


def test_every_request_reaches_the_model_with_every_call_answered_in_place() -> None:
    history: list[BaseMessage] = [
        HumanMessage("a"),
        _ai("c1", "c2"),
        _answer("c1"),
        HumanMessage("b"),
    ]
    middleware = ToolCallIntegrityMiddleware()
    sent: list[list[Any]] = []

    def handler(req: ModelRequest[Any]) -> ModelResponse[Any]:
        sent.append(list(req.messages))
        return ModelResponse(result=[AIMessage("hi", response_metadata={"finish_reason": "stop"})])

    middleware.wrap_model_call(ModelRequest(model=None, messages=history), handler)  # type: ignore[arg-type]
    (messages,) = sent
    assert [type(m).__name__ for m in messages] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
        "HumanMessage",
    ]
    assert messages[3].tool_call_id == "c2" and messages[3].status == "error"
    assert unanswered_calls(messages) == []


@pytest.mark.parametrize("finish", ["length", "max_tokens", "content_filter", None])
def test_calls_of_an_incomplete_response_are_answered_not_executed(finish: str | None) -> None:
    result = _respond([HumanMessage("x")], _ai("c1", "c2", finish=finish))
    ai, *answers = result
    assert isinstance(ai, AIMessage) and [c["id"] for c in ai.tool_calls] == ["c1", "c2"]
    assert [a.tool_call_id for a in answers] == ["c1", "c2"]  # type: ignore[attr-defined]
    assert all(json.loads(str(a.content))["code"] == "model_output_truncated" for a in answers)


@pytest.mark.parametrize("finish", ["stop", "tool_calls", "end_turn", "tool_use"])
def test_a_complete_response_passes_unchanged(finish: str) -> None:
    reply = _ai("c1", finish=finish)
    assert _respond([HumanMessage("x")], reply) == [reply]


def test_an_invalid_call_is_answered_and_its_valid_sibling_runs() -> None:
    ai, answer = _respond([HumanMessage("x")], _ai("ok", invalid=("bad",)))
    assert isinstance(ai, AIMessage) and ai.invalid_tool_calls == []
    assert [c["id"] for c in ai.tool_calls] == ["ok", "bad"]
    assert isinstance(answer, ToolMessage) and answer.tool_call_id == "bad"
    assert json.loads(str(answer.content))["code"] == "invalid_tool_call"


def test_the_run_fails_after_too_many_refused_responses_in_a_row() -> None:
    history: list[BaseMessage] = [HumanMessage("x")]
    for n in range(MODEL_REFUSED_RESPONSES_MAX):
        history += _respond(history, _ai(f"c{n}", finish="length"))
    with pytest.raises(ModelOutputTruncated):
        _respond(history, _ai("last", finish="length"))
    # A new user message starts the count again.
    history.append(HumanMessage("again"))
    assert len(_respond(history, _ai("fresh", finish="length"))) == 2
