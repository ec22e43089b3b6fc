"""PassthroughChatOpenAI sends byte-for-byte what ChatOpenAI sends, without the SDK's walk.

Both models talk to an ``httpx.MockTransport`` that records each request's body and answers like
OpenAI (one JSON completion, or a stream of chunks); the conversation has a system prompt, CJK
text, an image part, an assistant tool call, its tool result, and bound tools.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai.resources.chat.completions.completions as completions
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from yuxi.agents.models import build_chat_model
from yuxi.agents.models.openai_passthrough import PassthroughChatOpenAI, pass_bulk_fields_through
from yuxi.settings import Settings

_COMPLETION = {
    "id": "c1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "好的"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    body = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


class _Recorder:
    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(request.content)
        if json.loads(request.content).get("stream"):
            text = (
                _chunk({"role": "assistant", "content": ""})
                + _chunk({"content": "好的"})
                + _chunk({}, "stop")
                + "data: [DONE]\n\n"
            )
            return httpx.Response(200, text=text, headers={"content-type": "text/event-stream"})
        return httpx.Response(200, json=_COMPLETION)


@tool
def remember_memory(content: str) -> str:
    """Save one line to the user's memory (记住)."""
    return "saved"


_CONVERSATION = [
    SystemMessage("你是助手 — the system prompt"),
    HumanMessage(
        content=[
            {"type": "text", "text": "记住：我住在杭州"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ]
    ),
    AIMessage(
        content="",
        tool_calls=[{"id": "call_1", "name": "remember_memory", "args": {"content": "杭州"}}],
    ),
    ToolMessage(content='{"status": "updated"}', tool_call_id="call_1"),
    HumanMessage("谢谢"),
]


def _model(cls: type[ChatOpenAI], recorder: _Recorder, **extra: Any) -> ChatOpenAI:
    return cls(
        model="gpt-test",
        api_key="sk-test",
        base_url="http://model.test/v1",
        max_retries=0,
        http_async_client=httpx.AsyncClient(transport=httpx.MockTransport(recorder)),
        **extra,
    )


@pytest.mark.parametrize("streaming", [False, True])
async def test_the_body_on_the_wire_is_byte_identical(streaming: bool) -> None:
    stock, ours = _Recorder(), _Recorder()
    for cls, recorder in ((ChatOpenAI, stock), (PassthroughChatOpenAI, ours)):
        model = _model(cls, recorder, streaming=streaming, stream_usage=True)
        reply = await model.bind_tools([remember_memory]).ainvoke(_CONVERSATION)
        assert reply.content == "好的"
    assert len(stock.bodies) == len(ours.bodies) == 1
    assert ours.bodies[0] == stock.bodies[0]
    sent = json.loads(ours.bodies[0])
    assert len(sent["messages"]) == 5 and sent["tools"][0]["function"]["name"] == "remember_memory"


async def test_the_sdk_transform_never_walks_the_conversation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[Any] = []
    walk = completions.async_maybe_transform  # type: ignore[attr-defined]

    async def recording(data: Any, expected_type: Any) -> Any:
        seen.append(data)
        return await walk(data, expected_type)

    monkeypatch.setattr(completions, "async_maybe_transform", recording)
    recorder = _Recorder()
    model = _model(PassthroughChatOpenAI, recorder)
    await model.bind_tools([remember_memory]).ainvoke(_CONVERSATION)
    walked = [d for d in seen if isinstance(d, dict) and "messages" in d]
    assert walked and all(d["messages"] == [] and d["tools"] == [] for d in walked)
    assert len(json.loads(recorder.bodies[0])["messages"]) == 5


def test_a_callers_extra_body_keeps_precedence_and_structured_output_is_left_alone() -> None:
    payload = {"messages": [{"role": "user", "content": "a"}], "extra_body": {"messages": ["x"]}}
    assert pass_bulk_fields_through(dict(payload)) == payload

    class Answer(BaseModel):
        text: str

    typed = {"messages": [{"role": "user", "content": "a"}], "response_format": Answer}
    assert pass_bulk_fields_through(dict(typed)) == typed
    assert pass_bulk_fields_through({"messages": []}) == {"messages": []}


def test_openai_models_are_built_as_the_passthrough() -> None:
    built = build_chat_model(Settings(model="openai:gpt-4o-mini", model_api_key="sk-x"))
    assert type(built) is PassthroughChatOpenAI and built.model_name == "gpt-4o-mini"
