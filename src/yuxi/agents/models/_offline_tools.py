"""Bound tools, ``tool_choice`` and forced tool calls for the offline model.

``bind_tools`` stores the tools as OpenAI-format dicts and a normalised ``tool_choice`` in the
binding's keyword arguments, as provider models do; each generation reads them back here.

``tool_choice`` means what it means to providers:

* ``None`` / ``"auto"``: the model decides (its commands call their tools, anything else is
  answered in text);
* ``"none"``: no tool call at all;
* ``"any"`` / ``"required"``: it must call one of the bound tools;
* a tool's name (or ``{"type": "function", "function": {"name": ...}}``): it must call that
  tool and may call no other.

When a call is forced and the message is not one of the model's commands, the call is built
deterministically from the message and the tool's JSON schema (:func:`forced_call_args`):

* ``NAME(ARGS)`` written in the message for an allowed tool: ``ARGS`` split on commas,
  ``key=value`` or positional (in the schema's property order), each value read as JSON when it
  parses (``3`` → ``3``) and as text otherwise;
* otherwise every *required* property is filled: a string with the whole message, an integer or
  a number with the next number written in the message (in order; ``0`` once they run out), a
  boolean ``false``, an array ``[]``, an object its own required properties, an enum its first
  value. Optional properties are left out.
"""

from __future__ import annotations

import builtins
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

__all__ = [
    "BINDABLE_KEYWORDS",
    "ToolChoice",
    "ToolSpec",
    "explicit_call",
    "forced_call_args",
    "read_tool_choice",
    "tool_dict",
    "tool_specs",
]

#: ``bind_tools`` keywords the offline model understands besides ``tool_choice``; anything
#: else is refused (never silently dropped). LangChain's ``with_structured_output`` passes
#: ``ls_structured_output_format`` (tracing metadata only).
BINDABLE_KEYWORDS = frozenset({"ls_structured_output_format"})

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolChoice:
    """``mode`` ``auto`` / ``none`` / ``any`` (a call is required) / ``tool`` (only ``name``)."""

    mode: Literal["auto", "none", "any", "tool"]
    name: str | None = None

    @property
    def forced(self) -> bool:
        return self.mode in ("any", "tool")

    def allowed(self, names: Sequence[str]) -> tuple[str, ...]:
        """The bound tools this choice lets the model call."""
        if self.mode == "none":
            return ()
        if self.mode == "tool":
            return tuple(n for n in names if n == self.name)
        return tuple(names)

    def as_binding(self) -> str | dict[str, Any]:
        if self.mode == "tool":
            return {"type": "function", "function": {"name": self.name}}
        return self.mode


def tool_dict(
    tool: builtins.dict[str, Any] | type | Callable[..., Any] | BaseTool,
) -> dict[str, Any]:
    """``tool`` as an OpenAI-format tool dict (what the binding carries)."""
    converted = convert_to_openai_tool(tool)
    function = converted.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise ValueError(f"cannot bind {tool!r}: it has no tool name")
    return converted


def tool_specs(tools: Sequence[dict[str, Any]]) -> tuple[ToolSpec, ...]:
    """The names and argument schemas of OpenAI-format ``tools`` (see :func:`tool_dict`)."""
    specs = []
    for tool in tools:
        function = tool["function"]
        parameters = function.get("parameters")
        specs.append(
            ToolSpec(str(function["name"]), parameters if isinstance(parameters, dict) else {})
        )
    return tuple(specs)


def read_tool_choice(choice: object, names: Sequence[str]) -> ToolChoice:
    """Validate ``choice`` against the bound ``names``; a bad value raises ``ValueError``."""
    if choice is None or choice == "auto":
        return ToolChoice("auto")
    if choice == "none":
        return ToolChoice("none")
    if choice in ("any", "required"):
        if not names:
            raise ValueError(f"tool_choice={choice!r} needs at least one bound tool")
        return ToolChoice("any")
    name: object = choice
    if isinstance(choice, dict):
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if choice.get("type") != "function" or not isinstance(name, str):
            raise ValueError(
                f"unsupported tool_choice {choice!r}: use None, 'auto', 'none', 'any', "
                "'required', a tool name or {'type': 'function', 'function': {'name': ...}}"
            )
    if isinstance(name, str):
        if name not in names:
            raise ValueError(f"tool_choice names {name!r}, which is not a bound tool {names}")
        return ToolChoice("tool", name)
    raise ValueError(f"unsupported tool_choice {choice!r}")


def _scalar(text: str) -> Any:
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            return text[1:-1]
        return text


def explicit_call(text: str, specs: Sequence[ToolSpec]) -> tuple[ToolSpec, dict[str, Any]] | None:
    """The first ``NAME(ARGS)`` in ``text`` that names one of ``specs``, with its arguments."""
    best: tuple[int, ToolSpec, str] | None = None
    for spec in specs:
        found = re.search(rf"(?<![\w.]){re.escape(spec.name)}\(([^()]*)\)", text)
        if found is not None and (best is None or found.start() < best[0]):
            best = (found.start(), spec, found[1])
    if best is None:
        return None
    _, spec, inner = best
    names = list(_properties(spec.parameters))
    args: dict[str, Any] = {}
    positional = 0
    for part in (p for p in inner.split(",") if p.strip()):
        key, sep, value = part.partition("=")
        if sep and key.strip().isidentifier():
            args[key.strip()] = _scalar(value)
        elif positional < len(names):
            args[names[positional]] = _scalar(part)
            positional += 1
    return spec, args


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}


def _fill(schema: object, text: str, numbers: list[float]) -> Any:
    if not isinstance(schema, dict):
        return text
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in schema.get(key) or [] if isinstance(o, dict)]
        usable = [o for o in options if o.get("type") != "null"]
        if usable:
            return _fill(usable[0], text, numbers)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind in ("integer", "number"):
        value = numbers.pop(0) if numbers else 0
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "object" or "properties" in schema:
        return _fill_object(schema, text, numbers)
    return text


def _fill_object(schema: dict[str, Any], text: str, numbers: list[float]) -> dict[str, Any]:
    required = schema.get("required")
    names = [n for n in _properties(schema) if isinstance(required, list) and n in required]
    return {name: _fill(_properties(schema)[name], text, numbers) for name in names}


def forced_call_args(spec: ToolSpec, text: str) -> dict[str, Any]:
    """Arguments for a call of ``spec`` that the message did not spell out (see module doc)."""
    numbers = [float(n) for n in _NUMBER.findall(text)]
    return _fill_object(spec.parameters, text, numbers)
