"""The one tool adapter: typed result, YuxiError, unexpected exception, LangGraph control flow."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.errors import GraphInterrupt

from yuxi.agents.tools.tool_result import tool_message, tool_outcome
from yuxi.errors import MemoryConflict, MemoryQuotaExceeded


@dataclass(frozen=True)
class _Result:
    text: str

    def to_payload(self) -> dict[str, Any]:
        return {"status": "ok", "text": self.text}


def _runtime(tool_call_id: str = "call-7") -> ToolRuntime[Any, Any]:
    return ToolRuntime(
        state={"messages": []},
        context=None,
        config={},
        stream_writer=lambda _chunk: None,
        tool_call_id=tool_call_id,
        store=None,
    )


async def test_success_is_compact_json_with_status_success() -> None:
    async def call() -> _Result:
        return _Result("绿茶")

    message = await tool_message("t", _runtime(), call)
    assert (message.tool_call_id, message.name, message.status) == ("call-7", "t", "success")
    assert message.content == '{"status":"ok","text":"绿茶"}'


async def test_yuxi_error_is_an_error_message() -> None:
    async def call() -> _Result:
        raise MemoryConflict("not found")

    message = await tool_message("t", _runtime(), call)
    assert message.status == "error"
    assert json.loads(str(message.content)) == {
        "status": "error",
        "code": "memory_conflict",
        "error": "not found",
    }
    assert await tool_outcome(call) == (json.loads(str(message.content)), True)


async def test_an_errors_details_are_told_with_it() -> None:
    async def call() -> _Result:
        raise MemoryQuotaExceeded(
            "quota used", details={"quota_remaining": {"writes": 0, "bytes": 12}}
        )

    payload, is_error = await tool_outcome(call)
    assert is_error and payload == {
        "status": "error",
        "code": "memory_quota_exceeded",
        "error": "quota used",
        "quota_remaining": {"writes": 0, "bytes": 12},
    }


async def test_unexpected_exception_is_storage_unavailable_without_its_text() -> None:
    async def call() -> _Result:
        raise RuntimeError("secret internals")

    payload, is_error = await tool_outcome(call)
    assert is_error and payload["code"] == "storage_unavailable"
    assert "secret" not in payload["error"]


async def test_langgraph_control_flow_propagates() -> None:
    async def call() -> _Result:
        raise GraphInterrupt(())

    with pytest.raises(GraphInterrupt):
        await tool_outcome(call)


async def test_base_tool_passes_the_tool_message_through_unchanged() -> None:
    async def the_tool(x: str, *, runtime: ToolRuntime[Any, Any]) -> ToolMessage:
        async def call() -> _Result:
            return _Result(x)

        return await tool_message("the_tool", runtime, call)

    tool = StructuredTool.from_function(coroutine=the_tool, name="the_tool", description="d")
    # ToolNode injects the runtime into the arguments; here it is passed by hand.
    args = {"x": "hi", "runtime": _runtime("call-9")}
    out = await tool.ainvoke(
        {"type": "tool_call", "id": "call-9", "name": "the_tool", "args": args}
    )
    assert isinstance(out, ToolMessage)
    assert (out.tool_call_id, out.name, out.status) == ("call-9", "the_tool", "success")
    assert out.content == '{"status":"ok","text":"hi"}'
