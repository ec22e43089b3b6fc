"""A deterministic, offline chat model that drives the real tools honestly.

No network, no randomness: the same conversation always yields the same reply. It may only call
tools that are actually bound to it (``bind_tools``); asked for anything else it says it cannot.
It reads the last user message and understands (English or Chinese, ``:`` or ``：``)::

    remember: TEXT                      / 记住：TEXT          → remember_memory(content=TEXT)
    correct memory: OLD => NEW          / 纠正记忆：OLD => NEW → remember_memory(NEW, replaces=OLD)
    search history: QUERY               / 搜索历史：QUERY      → search_thread_messages(query)
    read thread: ID [at N] [with tools] / 读取线程：ID …       → read_thread_messages(...)
    what do you remember?               / 你记得什么？          → quotes its memory block
    delegate: TASK                      / 委派：TASK           → delegate_to_subagent(task)
    read file: PATH                     / 读取文件：PATH       → read_workspace_file(path)
    write file PATH: TEXT               / 写入文件 PATH：TEXT   → write_workspace_file(...)

Anything else gets a short echo. When the conversation ends with the results of its own tool
calls, the final answer quotes each result verbatim.

A message of two or more non-blank lines **each of which** is one of the tool commands above is
a plan: the lines run in order within one run, one tool call per model turn (the next line's
call once the previous call has its result; the step is the number of tool-calling turns since
the last user message), then one final answer quotes every result of the plan. A line whose
tool is not bound ends the plan there with the honest "cannot". Any other message is one
command, exactly as above: ``remember: TEXT`` may go on over several lines as long as a later
line is not a command of its own.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

__all__ = ["OfflineChatModel"]

_C = r"\s*[:：]\s*"
_ECHO_MAX_CHARS = 200
_STRAY_RESULT = "I received a tool result I did not ask for; ignoring it."
_MEMORY_BLOCK = re.compile(r"<memory_data>\n?(.*?)\n?</memory_data>", re.DOTALL)


@dataclass(frozen=True)
class _Intent:
    tool: str | None  # None: answered without a tool
    args: dict[str, Any]
    zh: bool
    kind: str


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags | re.DOTALL)


_I = re.IGNORECASE
_REMEMBER = (_rx(rf"^remember{_C}(?P<text>.+)$", _I), _rx(rf"^记住{_C}(?P<text>.+)$"))
_CORRECT = (
    _rx(rf"^correct memory{_C}(?P<old>.+?)\s*=>\s*(?P<new>.+)$", _I),
    _rx(rf"^纠正记忆{_C}(?P<old>.+?)\s*=>\s*(?P<new>.+)$"),
)
_SEARCH = (_rx(rf"^search history{_C}(?P<text>.+)$", _I), _rx(rf"^搜索历史{_C}(?P<text>.+)$"))
_READ_TAIL = r"(?:\s+at\s+(?P<mid>\d+))?(?P<tools>\s+with\s+tools)?\s*$"
_READ = (
    _rx(rf"^read thread{_C}(?P<tid>\S+?){_READ_TAIL}", _I),
    _rx(rf"^读取线程{_C}(?P<tid>\S+?){_READ_TAIL}", _I),
)
_RECALL = (_rx(r"^what do you remember\s*\??$", _I), _rx(r"^你记得什么\s*[?？]?$"))
_DELEGATE = (_rx(rf"^delegate{_C}(?P<text>.+)$", _I), _rx(rf"^委派{_C}(?P<text>.+)$"))
_READ_FILE = (
    _rx(rf"^read file{_C}(?P<path>\S+)\s*$", _I),
    _rx(rf"^读取文件{_C}(?P<path>\S+)\s*$"),
)
_WRITE = (
    _rx(rf"^write file\s+(?P<path>[^\s:：]+){_C}(?P<text>.*)$", _I),
    _rx(rf"^写入文件\s*(?P<path>[^\s:：]+){_C}(?P<text>.*)$"),
)


def _match(
    pair: tuple[re.Pattern[str], re.Pattern[str]], text: str
) -> tuple[re.Match[str], bool] | None:
    for zh, pattern in enumerate(pair):
        if (found := pattern.match(text)) is not None:
            return found, bool(zh)
    return None


def _parse(text: str) -> _Intent:
    if m := _match(_CORRECT, text):
        found, zh = m
        args = {"content": found["new"].strip(), "replaces": found["old"].strip()}
        return _Intent("remember_memory", args, zh, "correct")
    if m := _match(_REMEMBER, text):
        found, zh = m
        return _Intent("remember_memory", {"content": found["text"].strip()}, zh, "remember")
    if m := _match(_SEARCH, text):
        found, zh = m
        return _Intent("search_thread_messages", {"query": found["text"].strip()}, zh, "search")
    if m := _match(_READ, text):
        found, zh = m
        read_args: dict[str, Any] = {"thread_id": found["tid"]}
        if found["mid"] is not None:
            mid = int(found["mid"])
            # Out of int64 range it stays text: the tool refuses it as invalid_argument
            # (a giant JSON int would not even survive the checkpointer's msgpack).
            read_args["message_id"] = mid if mid < 2**63 else found["mid"]
        if found["tools"] is not None:
            read_args["include_tools"] = True
        return _Intent("read_thread_messages", read_args, zh, "read")
    if m := _match(_RECALL, text):
        return _Intent(None, {}, m[1], "recall")
    if m := _match(_DELEGATE, text):
        found, zh = m
        return _Intent("delegate_to_subagent", {"task": found["text"].strip()}, zh, "delegate")
    if m := _match(_READ_FILE, text):
        found, zh = m
        return _Intent("read_workspace_file", {"path": found["path"]}, zh, "read_file")
    if m := _match(_WRITE, text):
        found, zh = m
        write_args = {"path": found["path"], "content": found["text"].strip()}
        return _Intent("write_workspace_file", write_args, zh, "write")
    return _Intent(None, {}, False, "echo")


def _tool_name(tool: builtins.dict[str, Any] | type | Callable[..., Any] | BaseTool) -> str:
    if isinstance(tool, BaseTool):
        return tool.name
    if isinstance(tool, dict):
        function = tool.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return str(function["name"])
        if isinstance(tool.get("name"), str):
            return str(tool["name"])
    return str(convert_to_openai_tool(tool)["function"]["name"])


def _call_id(position: int, name: str, args: dict[str, Any], text: str) -> str:
    seed = json.dumps([position, name, args, text], ensure_ascii=False, sort_keys=True)
    return "call_" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:24]


def _content_text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else message.text


def _memory_text(messages: Sequence[BaseMessage]) -> str | None:
    for message in messages:
        if isinstance(message, SystemMessage):
            found = _MEMORY_BLOCK.search(_content_text(message))
            if found is not None and found[1].strip():
                return found[1]
    return None


def _plan(text: str) -> list[tuple[str, _Intent]]:
    """The lines of a multi-command message with their commands; empty unless there are two
    or more non-blank lines and every one of them is a tool command."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return []
    plan = [(line, _parse(line)) for line in lines]
    return plan if all(intent.tool is not None for _, intent in plan) else []


def _tool_call(position: int, intent: _Intent, text: str) -> AIMessage:
    assert intent.tool is not None
    call = ToolCall(
        name=intent.tool,
        args=intent.args,
        id=_call_id(position, intent.tool, intent.args, text),
        type="tool_call",
    )
    return AIMessage(content="", tool_calls=[call])


def _quote(result: ToolMessage, called: str) -> str:
    """One tool result, verbatim, as the final answer states it."""
    name = result.name or called
    content = _content_text(result)
    if result.status == "error":
        return f"The {name} call did not succeed: {content}"
    return f"{name} returned: {content}"


class OfflineChatModel(BaseChatModel):
    """Deterministic offline model; ``bound_tool_names`` are the only tools it may call."""

    bound_tool_names: tuple[str, ...] = ()

    @property
    def _llm_type(self) -> str:
        return "yuxi-offline"

    @property
    def _identifying_params(self) -> builtins.dict[str, Any]:
        return {"model": "yuxi-offline", "tools": list(self.bound_tool_names)}

    def bind_tools(
        self,
        tools: Sequence[builtins.dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """A copy of this model that knows (and may call) exactly ``tools``."""
        return self.model_copy(update={"bound_tool_names": tuple(_tool_name(t) for t in tools)})

    # -- generation -------------------------------------------------------------------------

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.respond(messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.respond(messages))])

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """The deterministic reply to ``messages`` (public for tests and the CLI)."""
        human_at = next(
            (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], HumanMessage)),
            None,
        )
        if human_at is not None:
            plan = _plan(_content_text(messages[human_at]).strip())
            if plan:
                return self._plan_step(messages, human_at, plan)
        if messages and isinstance(messages[-1], ToolMessage):
            return self._answer_tool_results(messages)
        if human_at is None:
            return AIMessage(content="Hello! I am Yuxi's offline model. How can I help?")
        text = _content_text(messages[human_at]).strip()
        intent = _parse(text)
        if intent.kind == "recall":
            return AIMessage(content=self._recall(messages, zh=intent.zh))
        if intent.tool is None:
            echo = text if len(text) <= _ECHO_MAX_CHARS else text[:_ECHO_MAX_CHARS] + "…"
            return AIMessage(content=f"You said: {echo}")
        if intent.tool not in self.bound_tool_names:
            return AIMessage(content=self._cannot(intent))
        return _tool_call(len(messages), intent, text)

    def _plan_step(
        self, messages: Sequence[BaseMessage], human_at: int, plan: Sequence[tuple[str, _Intent]]
    ) -> AIMessage:
        """The next line's tool call, or the final answer once every line has its result."""
        since = messages[human_at + 1 :]
        turns = [m for m in since if isinstance(m, AIMessage) and m.tool_calls]
        if len(turns) < len(plan):
            line, intent = plan[len(turns)]
            if intent.tool in self.bound_tool_names:
                return _tool_call(len(messages), intent, line)
            stopped: str | None = self._cannot(intent)
        else:
            stopped = None
        own_calls = {call["id"]: call["name"] for turn in turns for call in turn.tool_calls}
        results = [m for m in since if isinstance(m, ToolMessage)]
        if any(r.tool_call_id not in own_calls for r in results):
            return AIMessage(content=_STRAY_RESULT)
        lines = [_quote(r, own_calls[r.tool_call_id]) for r in results]
        if stopped is not None:
            lines.append(stopped)
        return AIMessage(content="\n".join(lines))

    @staticmethod
    def _recall(messages: Sequence[BaseMessage], *, zh: bool) -> str:
        memory = _memory_text(messages)
        if memory is None:
            return "我还没有保存任何记忆。" if zh else "I have no saved memory."
        if zh:
            return f"我记得以下内容（来自已保存的记忆）：\n{memory}"
        return f"Here is what I remember (from my saved memory):\n{memory}"

    @staticmethod
    def _cannot(intent: _Intent) -> str:
        if intent.zh:
            return f"我做不到：此对话中我没有可用的工具 `{intent.tool}`。"
        return (
            f"I cannot do that: the tool `{intent.tool}` is not available to me in this "
            "conversation."
        )

    @staticmethod
    def _answer_tool_results(messages: Sequence[BaseMessage]) -> AIMessage:
        results: list[ToolMessage] = []
        index = len(messages) - 1
        while index >= 0 and isinstance(messages[index], ToolMessage):
            message = messages[index]
            assert isinstance(message, ToolMessage)
            results.append(message)
            index -= 1
        results.reverse()
        caller = messages[index] if index >= 0 else None
        own_calls = (
            {call["id"]: call["name"] for call in caller.tool_calls}
            if isinstance(caller, AIMessage)
            else {}
        )
        if not results or any(r.tool_call_id not in own_calls for r in results):
            return AIMessage(content=_STRAY_RESULT)
        lines = [_quote(result, own_calls[result.tool_call_id]) for result in results]
        return AIMessage(content="\n".join(lines))
