"""The offline model's final answers: one human sentence (or short list) per tool result.

The tool card in the UI already shows each result's JSON; the answer says what happened in
words and never repeats the JSON. What a result means is read from its ``status`` and from the
known result shapes of our tools (``yuxi.agents.tools.tool_result``); an error's message is the
result's ``error`` field, or its whole text when it is not our JSON (a human's rejection).

A past conversation is named by its title and a date a person reads ("3 Mar 2026, 09:30 UTC"),
never by its 32-hex id or a message number: the tool card beside the answer links each one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import ToolCall, ToolMessage

from yuxi.agents.models._offline_commands import content_text

__all__ = ["REJECTED_WRITE_REPLY", "describe_result"]

_Describe = Callable[[dict[str, Any], Mapping[str, Any]], str | None]


def _payload(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _one_line(value: object) -> str:
    return " ".join(str(value).split())


def _human_time(value: object) -> str | None:
    """An ISO 8601 time as a person reads it, in UTC (the offline model knows no locale):
    ``3 Mar 2026, 09:30 UTC``; None when it does not parse."""
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return f"{moment.day} {moment:%b %Y, %H:%M} UTC"


#: Who said a message, in the answer's own voice.
_SPEAKER = {"user": "you", "assistant": "me"}


def _speaker(role: object) -> str:
    return _SPEAKER.get(str(role), str(role))


def _title(value: object) -> str:
    return f"«{_one_line(value or 'Untitled')}»"


def _error_text(text: str, payload: dict[str, Any] | None) -> str:
    if payload is not None and isinstance(payload.get("error"), str):
        return str(payload["error"])
    return text


def _remembered(payload: dict[str, Any], args: Mapping[str, Any]) -> str | None:
    status = payload.get("status")
    if status == "unchanged":
        return "That is already in memory."
    if status != "updated":
        return None
    if args.get("replaces"):
        return f"Corrected in memory: «{args['replaces']}» → «{args.get('content', '')}»"
    return f"Saved to memory: «{args.get('content', '')}»"


def _found(payload: dict[str, Any], args: Mapping[str, Any]) -> str | None:
    items = payload.get("items")
    if not isinstance(items, list):
        return None
    query = args.get("query", "")
    if not items:
        return f"I found nothing in your past conversations for «{query}»."
    noun = "message" if len(items) == 1 else "messages"
    lines = [f"I found {len(items)} {noun} in your past conversations for «{query}»:"]
    for item in items:
        if isinstance(item, dict):
            said = ", ".join(
                part
                for part in (_human_time(item.get("created_at")), _speaker(item.get("role")))
                if part
            )
            snippet = _one_line(item.get("content", ""))
            lines.append(f"- {_title(item.get('title'))} ({said}): {snippet}")
    if payload.get("truncated"):
        lines.append("(Lower-ranked matches were left out.)")
    if payload.get("complete") is False:
        lines.append("(Only the newest messages were ranked for the commonest words.)")
    return "\n".join(lines)


def _read(payload: dict[str, Any], _: Mapping[str, Any]) -> str | None:
    messages = payload.get("messages")
    if not isinstance(messages, list):
        return None
    lines = [f"Thread {_title(payload.get('title'))}:"]
    for message in messages:
        if isinstance(message, dict):
            lines.append(
                f"- {_speaker(message.get('role'))}: {_one_line(message.get('content', ''))}"
            )
    if not messages:
        lines.append("- no messages")
    for call in payload.get("tool_calls") or []:
        if isinstance(call, dict):
            lines.append(f"- tool call {call.get('name')}: {call.get('status')}")
    if payload.get("truncated"):
        lines.append("(Some of it was left out to stay within the reading budget.)")
    return "\n".join(lines)


def _listed(payload: dict[str, Any], args: Mapping[str, Any]) -> str | None:
    items = payload.get("items")
    if not isinstance(items, list):
        return None
    when = f" before {args['before']}" if args.get("before") else ""
    if not items:
        return f"I found no past conversations{when}."
    noun = "conversation" if len(items) == 1 else "conversations"
    lines = [f"Your {len(items)} most recent past {noun}{when}:"]
    for item in items:
        if isinstance(item, dict):
            count = item.get("message_count")
            where = ", ".join(
                part
                for part in (
                    _human_time(item.get("last_message_at")),
                    f"{count} message{'' if count == 1 else 's'}" if count is not None else None,
                )
                if part
            )
            first = _one_line(item.get("first_user_line", ""))
            lines.append(f"- {_title(item.get('title'))} ({where}): {first}")
    if payload.get("has_more"):
        lines.append("(There are older ones.)")
    return "\n".join(lines)


def _file_read(payload: dict[str, Any], _: Mapping[str, Any]) -> str | None:
    content = payload.get("content")
    if not isinstance(content, str):
        return None
    if not content:
        return f"{payload.get('path')} is empty."
    if payload.get("truncated"):
        return f"{content}\n(Only the first {payload.get('size')} bytes of {payload.get('path')}.)"
    return content


def _file_written(payload: dict[str, Any], _: Mapping[str, Any]) -> str | None:
    verb = {"written": "Wrote", "edited": "Edited"}.get(str(payload.get("status")))
    if verb is None:
        return None
    return f"{verb} {payload.get('path')} ({payload.get('size')} bytes)."


def _delegated(payload: dict[str, Any], _: Mapping[str, Any]) -> str | None:
    reply = payload.get("reply")
    return None if not isinstance(reply, str) else f"The SubAgent replied: {reply}"


_DESCRIBE: dict[str, _Describe] = {
    "remember_memory": _remembered,
    "search_thread_messages": _found,
    "read_thread_messages": _read,
    "list_threads": _listed,
    "read_workspace_file": _file_read,
    "write_workspace_file": _file_written,
    "edit_workspace_file": _file_written,
    "delegate_to_subagent": _delegated,
}


#: The reply to a memory write the user rejected: words for them, not the error's (which
#: addresses the model: "Do not save it again…").
REJECTED_WRITE_REPLY = "All right, I won't save that: you rejected it, so nothing was saved."


def _value_text(value: object) -> str:
    if isinstance(value, dict | list):
        return _one_line(json.dumps(value, ensure_ascii=False))
    return _one_line(value)


def _generic(name: str, text: str, payload: dict[str, Any] | None) -> str:
    """Any other tool's result in words: its fields as ``key: value``, or its text."""
    if payload is None:
        return f"{name} answered: {_one_line(text)}"
    fields = "; ".join(f"{key}: {_value_text(value)}" for key, value in payload.items())
    return f"{name} answered with {fields or 'nothing'}."


def describe_result(result: ToolMessage, call: ToolCall) -> str:
    """The final answer's sentence for ``result``, the answer to the model's own ``call``."""
    name = call["name"]
    text = content_text(result)
    payload = _payload(text)
    if result.status == "error":
        message = _error_text(text, payload)
        if payload is not None and payload.get("code") == "memory_write_rejected":
            # The error's text tells the model not to retry; the reply is for the user.
            return REJECTED_WRITE_REPLY
        if name == "remember_memory":
            return f"I couldn't save that: {message}"
        return f"The {name} call did not succeed: {message}"
    describe = _DESCRIBE.get(name)
    sentence = describe(payload, call["args"]) if describe and payload is not None else None
    return sentence if sentence is not None else _generic(name, text, payload)
