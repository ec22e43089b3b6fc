"""Per-run tools share their schemas, never their closures (yuxi.agents.tools.run_tool)."""

from __future__ import annotations

import asyncio

from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from yuxi.agents.tools.run_tool import make_run_tool


def _factory(owner: str) -> StructuredTool:
    async def whoami(question: str, times: int = 1) -> str:
        return f"{owner}:{question}:{times}"

    return make_run_tool(whoami, name="whoami", description="Says whose tool this is.")


def test_two_runs_tools_share_schemas_but_call_their_own_closures() -> None:
    first, second = _factory("run-a"), _factory("run-b")
    assert first is not second
    assert first.args_schema is second.args_schema
    assert first.tool_call_schema is second.tool_call_schema
    assert asyncio.run(first.ainvoke({"question": "q"})) == "run-a:q:1"
    assert asyncio.run(second.ainvoke({"question": "q", "times": 2})) == "run-b:q:2"


def test_the_model_sees_exactly_what_from_function_would_show() -> None:
    async def whoami(question: str, times: int = 1) -> str:
        return question * times

    plain = StructuredTool.from_function(
        coroutine=whoami, name="whoami", description="Says whose tool this is."
    )
    assert convert_to_openai_tool(_factory("run-c")) == convert_to_openai_tool(plain)
