"""A deterministic, offline chat model that drives the real tools honestly.

No network, no randomness: the same conversation always yields the same reply. It may only call
tools that are actually bound to it (``bind_tools``) and that ``tool_choice`` allows; asked for
anything else it says it cannot. It reads the last user message and understands (English or
Chinese, ``:`` or ``：``)::

    remember: TEXT                      / 记住：TEXT          → remember_memory(content=TEXT)
    correct memory: OLD => NEW          / 纠正记忆：OLD => NEW → remember_memory(NEW, replaces=OLD)
    search history: QUERY               / 搜索历史：QUERY      → search_thread_messages(query)
    read thread: ID [at N] [with tools] / 读取线程：ID …       → read_thread_messages(...)
    recent threads [before DATE]        / 最近线程[：DATE之前]  → list_threads([before=DATE])
    what do you remember?               / 你记得什么？          → quotes its memory block
    delegate: TASK                      / 委派：TASK           → delegate_to_subagent(task)
    read file: PATH                     / 读取文件：PATH       → read_workspace_file(path)
    write file PATH: TEXT               / 写入文件 PATH：TEXT   → write_workspace_file(...)

Anything else gets a short echo ("You said: …"). When the conversation ends with the results
of its own tool calls, the final answer says in words what each result means ("Saved to memory:
«…»", "I couldn't save that: …", the threads a search found, the file's text, "Wrote PATH (N
bytes)."): the UI's tool card already shows the JSON (:mod:`._offline_answers`).

A message of two or more non-blank lines **each of which** is one of the tool commands above is
a plan: the lines run in order within one run, one tool call per model turn (the next line's
call once the previous call has its result; the step is the number of tool-calling turns since
the last user message), then one final answer covers every result of the plan. A line whose
tool is not bound ends the plan there with the honest "cannot". Any other message is one
command, exactly as above: ``remember: TEXT`` may go on over several lines as long as a later
line is not a command of its own.

As a LangChain chat model it is a proper one (``tests/unit/agents/test_offline_standard.py``
runs LangChain's standard suites): ``tool_choice`` is honoured (:mod:`._offline_tools`; a
forced call that is not a command is built from the message and the tool's schema), unknown
keyword arguments are refused, it streams (text in pieces, tool calls as ``tool_call_chunks``,
a last chunk with ``chunk_position="last"``), and every response carries ``usage_metadata``
(a documented deterministic count), a finish reason and ``model_name`` (:mod:`._offline_output`).
It has no network, so it takes no API key, timeout or retry settings (they are refused).
"""

from __future__ import annotations

import builtins
import hashlib
import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LangSmithParams, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import ConfigDict, Field, field_validator

from yuxi.agents.models._offline_answers import describe_result
from yuxi.agents.models._offline_commands import (
    MEMORY_TOOLS,
    Intent,
    content_text,
    memory_is_off,
    memory_text,
    parse,
    plan,
)
from yuxi.agents.models._offline_output import (
    Reply,
    finish,
    input_tokens,
    reply_chunks,
    reply_result,
)
from yuxi.agents.models._offline_tools import (
    BINDABLE_KEYWORDS,
    ToolChoice,
    ToolSpec,
    explicit_call,
    forced_call_args,
    read_tool_choice,
    tool_dict,
    tool_specs,
)

__all__ = ["OFFLINE_MODEL_NAME", "OfflineChatModel"]

OFFLINE_MODEL_NAME = "yuxi-offline"
_ECHO_MAX_CHARS = 200
_STRAY_RESULT = "I received a tool result I did not ask for; ignoring it."
_AUTO = ToolChoice("auto")
#: What a generation call may carry: the binding's ``tools``/``tool_choice``, a per-call
#: ``model`` name or ``max_tokens``, and what LangChain itself passes along.
_CALL_KEYWORDS = frozenset(
    {"tools", "tool_choice", "model", "max_tokens", "stream", "ls_structured_output_format"}
)


@dataclass(frozen=True)
class _Call:
    """One generation's options, validated."""

    tools: tuple[dict[str, Any], ...]
    specs: tuple[ToolSpec, ...]
    choice: ToolChoice
    stop: tuple[str, ...]
    max_tokens: int | None
    model_name: str


def _call_id(position: int, name: str, args: dict[str, Any], text: str) -> str:
    seed = json.dumps([position, name, args, text], ensure_ascii=False, sort_keys=True)
    return "call_" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:24]


def _tool_call(position: int, name: str, args: dict[str, Any], text: str) -> AIMessage:
    call = ToolCall(name=name, args=args, id=_call_id(position, name, args, text), type="tool_call")
    return AIMessage(content="", tool_calls=[call])


def _last_human(messages: Sequence[BaseMessage]) -> int | None:
    return next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], HumanMessage)),
        None,
    )


_MEMORY_OFF_ZH = "长期记忆已关闭：打开“记忆”开关后我才能使用它。"
_MEMORY_OFF_EN = "Long-term memory is off: turn on the Memory switch and I can use it."


def _cannot(intent: Intent, messages: Sequence[BaseMessage]) -> str:
    if intent.tool in MEMORY_TOOLS and memory_is_off(messages):
        return _MEMORY_OFF_ZH if intent.zh else _MEMORY_OFF_EN
    if intent.zh:
        return f"我做不到：此对话中我没有可用的工具 `{intent.tool}`。"
    return (
        f"I cannot do that: the tool `{intent.tool}` is not available to me in this conversation."
    )


def _recall(messages: Sequence[BaseMessage], *, zh: bool) -> str:
    memory = memory_text(messages)
    if memory is None and memory_is_off(messages):
        return _MEMORY_OFF_ZH if zh else _MEMORY_OFF_EN
    if memory is None:
        return "我还没有保存任何记忆。" if zh else "I have no saved memory."
    if zh:
        return f"我记得以下内容（来自已保存的记忆）：\n{memory}"
    return f"Here is what I remember (from my saved memory):\n{memory}"


def _answer(results: Sequence[ToolMessage], own: dict[str, ToolCall]) -> list[str] | None:
    """One description per result, or None if any result answers a call it did not make."""
    if any(r.tool_call_id not in own for r in results):
        return None
    return [describe_result(r, own[r.tool_call_id]) for r in results]


class OfflineChatModel(BaseChatModel):
    """Deterministic offline model (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, protected_namespaces=())

    model_name: str = Field(default=OFFLINE_MODEL_NAME, alias="model")
    """Only a label: reported as ``model_name`` and ``ls_model_name``."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Cuts a longer text answer (finish reason ``length``)."""
    stop: list[str] | None = None
    """Stop sequences: a text answer ends before the first one."""
    temperature: float | None = None
    """The model is deterministic: only ``0`` (or unset) is accepted."""
    streaming: bool = False
    """``invoke`` streams internally (LangChain's standard flag)."""

    @field_validator("temperature")
    @classmethod
    def _deterministic(cls, value: float | None) -> float | None:
        if value not in (None, 0):
            raise ValueError("the offline model is deterministic: temperature must be 0 or unset")
        return value

    @property
    def _llm_type(self) -> str:
        return "yuxi-offline"

    @property
    def _identifying_params(self) -> builtins.dict[str, Any]:
        return {"model_name": self.model_name, "max_tokens": self.max_tokens, "stop": self.stop}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        model = kwargs.get("model")
        params = LangSmithParams(
            ls_provider="yuxi",
            ls_model_name=model if isinstance(model, str) else self.model_name,
            ls_model_type="chat",
        )
        if self.temperature is not None:
            params["ls_temperature"] = self.temperature
        if (max_tokens := kwargs.get("max_tokens", self.max_tokens)) is not None:
            params["ls_max_tokens"] = max_tokens
        if stops := stop or self.stop:
            params["ls_stop"] = stops
        return params

    def bind_tools(
        self,
        tools: Sequence[builtins.dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | builtins.dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """This model bound to exactly ``tools`` under ``tool_choice``; any other keyword
        argument is refused with ``TypeError`` (the offline model would not honour it)."""
        unknown = sorted(set(kwargs) - BINDABLE_KEYWORDS)
        if unknown:
            raise TypeError(
                f"OfflineChatModel.bind_tools() does not support {', '.join(unknown)}; "
                "it takes tools and tool_choice only"
            )
        dicts = [tool_dict(tool) for tool in tools]
        choice = read_tool_choice(tool_choice, [d["function"]["name"] for d in dicts])
        return self.bind(tools=dicts, tool_choice=choice.as_binding(), **kwargs)

    # -- generation -------------------------------------------------------------------------

    def _call(self, stop: list[str] | None, kwargs: dict[str, Any]) -> _Call:
        unknown = sorted(set(kwargs) - _CALL_KEYWORDS)
        if unknown:
            raise TypeError(f"the offline model does not support {', '.join(unknown)}")
        given = kwargs.get("tools") or ()
        if not isinstance(given, list | tuple):
            raise TypeError("tools must be a list of tools (use bind_tools)")
        tools = tuple(tool_dict(tool) for tool in given)
        specs = tool_specs(tools)
        choice = read_tool_choice(kwargs.get("tool_choice"), [s.name for s in specs])
        max_tokens = kwargs.get("max_tokens", self.max_tokens)
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
            raise ValueError(f"max_tokens must be a positive integer, not {max_tokens!r}")
        model = kwargs.get("model")
        return _Call(
            tools=tools,
            specs=specs,
            choice=choice,
            stop=tuple(stop if stop is not None else self.stop or ()),
            max_tokens=max_tokens,
            model_name=model if isinstance(model, str) and model else self.model_name,
        )

    def _reply(self, messages: list[BaseMessage], call: _Call) -> Reply:
        message = self.respond(messages, tools=call.specs, tool_choice=call.choice)
        return finish(
            message,
            prompt_tokens=input_tokens(messages, call.tools),
            stop=call.stop,
            max_tokens=call.max_tokens,
            model_name=call.model_name,
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return reply_result(self._reply(messages, self._call(stop, kwargs)))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return reply_result(self._reply(messages, self._call(stop, kwargs)))

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        yield from reply_chunks(self._reply(messages, self._call(stop, kwargs)))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in reply_chunks(self._reply(messages, self._call(stop, kwargs))):
            yield chunk

    # -- the decision -----------------------------------------------------------------------

    def respond(
        self,
        messages: Sequence[BaseMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = _AUTO,
    ) -> AIMessage:
        """The deterministic reply to ``messages`` with ``tools`` bound under ``tool_choice``
        (public for tests): text, or one tool call. Usage and finish reason are added later."""
        allowed = tool_choice.allowed([spec.name for spec in tools])
        reply = self._respond(messages, allowed)
        usable = [spec for spec in tools if spec.name in allowed]
        if tool_choice.forced and usable and not reply.tool_calls:
            human_at = _last_human(messages)
            text = "" if human_at is None else content_text(messages[human_at]).strip()
            found = explicit_call(text, usable)
            spec, args = found if found else (usable[0], forced_call_args(usable[0], text))
            return _tool_call(len(messages), spec.name, args, text)
        return reply

    def _respond(self, messages: Sequence[BaseMessage], allowed: Sequence[str]) -> AIMessage:
        human_at = _last_human(messages)
        if human_at is not None:
            steps = plan(content_text(messages[human_at]).strip())
            if steps:
                return self._plan_step(messages, human_at, steps, allowed)
        if messages and isinstance(messages[-1], ToolMessage):
            return self._answer_tool_results(messages)
        if human_at is None:
            return AIMessage(content="Hello! I am Yuxi's offline model. How can I help?")
        text = content_text(messages[human_at]).strip()
        intent = parse(text)
        if intent.kind == "recall":
            return AIMessage(content=_recall(messages, zh=intent.zh))
        if intent.tool is None:
            echo = text if len(text) <= _ECHO_MAX_CHARS else text[:_ECHO_MAX_CHARS] + "…"
            return AIMessage(content=f"You said: {echo}")
        if intent.tool not in allowed:
            return AIMessage(content=_cannot(intent, messages))
        return _tool_call(len(messages), intent.tool, intent.args, text)

    @staticmethod
    def _plan_step(
        messages: Sequence[BaseMessage],
        human_at: int,
        steps: Sequence[tuple[str, Intent]],
        allowed: Sequence[str],
    ) -> AIMessage:
        """The next line's tool call, or the final answer once every line has its result."""
        since = messages[human_at + 1 :]
        turns = [m for m in since if isinstance(m, AIMessage) and m.tool_calls]
        stopped: str | None = None
        if len(turns) < len(steps):
            line, intent = steps[len(turns)]
            if intent.tool is not None and intent.tool in allowed:
                return _tool_call(len(messages), intent.tool, intent.args, line)
            stopped = _cannot(intent, messages)
        own = {call["id"]: call for turn in turns for call in turn.tool_calls if call["id"]}
        lines = _answer([m for m in since if isinstance(m, ToolMessage)], own)
        if lines is None:
            return AIMessage(content=_STRAY_RESULT)
        return AIMessage(content="\n".join([*lines, *([stopped] if stopped else [])]))

    @staticmethod
    def _answer_tool_results(messages: Sequence[BaseMessage]) -> AIMessage:
        index = len(messages) - 1
        while index >= 0 and isinstance(messages[index], ToolMessage):
            index -= 1
        results = [m for m in messages[index + 1 :] if isinstance(m, ToolMessage)]
        caller = messages[index] if index >= 0 else None
        own = (
            {call["id"]: call for call in caller.tool_calls if call["id"]}
            if isinstance(caller, AIMessage)
            else {}
        )
        lines = _answer(results, own) if results else None
        return AIMessage(content=_STRAY_RESULT if lines is None else "\n".join(lines))
