"""Agent tools with schemas built once per process.

Tools are built with each compiled graph (one per configuration, shared by its runs; they read
the run from the call's ``ToolRuntime.context``). Built naively (``StructuredTool.from_function``)
each tool object would get its own pydantic argument model and tool-call model, generated from
the same function signature for every graph compiled; ``docs/performance.md`` describes the
profile that found that schema work.

The schemas depend only on the function's signature, never on what it closes over, so they are
kept per code object (every closure of one tool function shares its code object) and per tool
name. The cache holds one entry per tool definition in the codebase, so it stays tiny.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import CodeType
from typing import Any

from langchain_core.tools import StructuredTool
from langchain_core.tools.base import ArgsSchema

_ARGS: dict[tuple[CodeType, str], ArgsSchema | None] = {}
_CALLS: dict[tuple[str, str, Any], ArgsSchema] = {}


class RunTool(StructuredTool):
    """A ``StructuredTool`` whose tool-call schema (what the model is shown) is shared by every
    tool with the same name, description and argument model."""

    @property
    def tool_call_schema(self) -> ArgsSchema:
        if isinstance(self.args_schema, dict):
            return super().tool_call_schema
        key = (self.name, self.description, self.args_schema)
        schema = _CALLS.get(key)
        if schema is None:
            schema = _CALLS[key] = super().tool_call_schema
        return schema


def make_run_tool(
    coroutine: Callable[..., Awaitable[Any]], *, name: str, description: str
) -> StructuredTool:
    """A tool from a coroutine defined inside a tool factory."""
    key = (coroutine.__code__, name)
    if key not in _ARGS:
        first = StructuredTool.from_function(
            coroutine=coroutine, name=name, description=description
        )
        _ARGS[key] = first.args_schema
    return RunTool.from_function(
        coroutine=coroutine, name=name, description=description, args_schema=_ARGS[key]
    )
