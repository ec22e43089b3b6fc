"""The offline model's command grammar: what a user message asks for, and nothing else.

Pure functions over text; :mod:`yuxi.agents.models.offline` decides what to do with an
:class:`Intent` (call the tool, say it cannot, answer without a tool).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

from yuxi.agents.prompts import MEMORY_OFF_HEADING

__all__ = [
    "MEMORY_TOOLS",
    "Intent",
    "content_text",
    "memory_is_off",
    "memory_text",
    "parse",
    "plan",
]

#: The tools that exist only while the user's memory switch is on.
MEMORY_TOOLS = ("remember_memory", "search_thread_messages", "read_thread_messages", "list_threads")

_C = r"\s*[:：]\s*"
#: The memory block: markers that carry the run's nonce; only the closing one with the same
#: nonce ends it (yuxi.utils.prompt_framing).
_MEMORY_BLOCK = re.compile(
    r'<memory_data nonce="(?P<nonce>[0-9a-f]+)">\n?(?P<text>.*?)\n?'
    r'</memory_data nonce="(?P=nonce)">',
    re.DOTALL,
)


@dataclass(frozen=True)
class Intent:
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
_RECENT = (
    _rx(r"^recent threads(?:\s+before\s+(?P<before>\S+))?\s*$", _I),
    _rx(rf"^最近线程(?:(?:{_C}|\s+)(?P<before>[^\s之]+)\s*之前)?\s*$"),
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


def parse(text: str) -> Intent:
    """The command ``text`` (already stripped) is, or ``kind="echo"``."""
    if m := _match(_CORRECT, text):
        found, zh = m
        args = {"content": found["new"].strip(), "replaces": found["old"].strip()}
        return Intent("remember_memory", args, zh, "correct")
    if m := _match(_REMEMBER, text):
        found, zh = m
        return Intent("remember_memory", {"content": found["text"].strip()}, zh, "remember")
    if m := _match(_SEARCH, text):
        found, zh = m
        return Intent("search_thread_messages", {"query": found["text"].strip()}, zh, "search")
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
        return Intent("read_thread_messages", read_args, zh, "read")
    if m := _match(_RECENT, text):
        found, zh = m
        recent_args = {} if found["before"] is None else {"before": found["before"]}
        return Intent("list_threads", recent_args, zh, "recent")
    if m := _match(_RECALL, text):
        return Intent(None, {}, m[1], "recall")
    if m := _match(_DELEGATE, text):
        found, zh = m
        return Intent("delegate_to_subagent", {"task": found["text"].strip()}, zh, "delegate")
    if m := _match(_READ_FILE, text):
        found, zh = m
        return Intent("read_workspace_file", {"path": found["path"]}, zh, "read_file")
    if m := _match(_WRITE, text):
        found, zh = m
        write_args = {"path": found["path"], "content": found["text"].strip()}
        return Intent("write_workspace_file", write_args, zh, "write")
    return Intent(None, {}, False, "echo")


def plan(text: str) -> list[tuple[str, Intent]]:
    """The lines of a multi-command message with their commands; empty unless there are two
    or more non-blank lines and every one of them is a tool command."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return []
    steps = [(line, parse(line)) for line in lines]
    return steps if all(intent.tool is not None for _, intent in steps) else []


def content_text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else message.text


def memory_is_off(messages: Sequence[BaseMessage]) -> bool:
    """True when a system message says the user turned memory off (``MEMORY_OFF_NOTE``)."""
    return any(
        isinstance(m, SystemMessage) and MEMORY_OFF_HEADING in content_text(m) for m in messages
    )


def memory_text(messages: Sequence[BaseMessage]) -> str | None:
    """The text of the run's memory block, if a system message carries a non-empty one."""
    for message in messages:
        if isinstance(message, SystemMessage):
            found = _MEMORY_BLOCK.search(content_text(message))
            if found is not None and found["text"].strip():
                return found["text"]
    return None
