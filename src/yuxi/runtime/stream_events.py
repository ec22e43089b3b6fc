"""Translate a LangGraph chatbot stream into the typed records a run keeps. Pure: no I/O.

The executor streams with ``stream_mode=["updates", "messages"]`` and feeds each
``(mode, chunk)`` pair to :meth:`StreamTranslator.feed`; what comes back is recorded in order.

* ``messages`` chunks are the chatbot model's tokens (a SubAgent's tokens, tagged with another
  ``lc_agent_name``, are skipped). The first text of each model call is recorded at once — the
  reader's first sight of an answer is what they wait for, and a short answer would otherwise
  appear only with the run's end; after it, text is buffered into :class:`TokenText` records of
  at least :data:`TOKEN_FLUSH_CHARS` characters so a long answer is not one database write per
  token.
* ``updates`` chunks carry whole messages per node: an AI message with tool calls, a tool's
  result, the final AI answer, or an ``__interrupt__``. Buffered tokens are flushed first, so
  records keep the order the model produced them in. Messages already in the thread's checkpoint
  (recorded by earlier runs) are skipped by id.

A tool's outcome is its ``ToolMessage.status`` — the tool layer turns every failure into a
``status="error"`` message — and the content is never parsed to second-guess it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, TypeAlias

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage

from yuxi.agents.graphs.chatbot import CHATBOT_AGENT_NAME
from yuxi.services.runs.service import ProposedToolCall, ToolOutcome
from yuxi.utils.json_utils import jsonable

__all__ = [
    "TOKEN_FLUSH_CHARS",
    "AssistantReplied",
    "InterruptRequested",
    "StreamEvent",
    "StreamTranslator",
    "TokenText",
    "ToolCallsProposed",
    "ToolFinished",
    "message_text",
]

#: Buffered token text is recorded once it reaches this many characters.
TOKEN_FLUSH_CHARS = 200


@dataclass(frozen=True)
class TokenText:
    text: str


@dataclass(frozen=True)
class ToolCallsProposed:
    content: str
    calls: tuple[ProposedToolCall, ...]


@dataclass(frozen=True)
class ToolFinished:
    outcome: ToolOutcome


@dataclass(frozen=True)
class AssistantReplied:
    content: str


@dataclass(frozen=True)
class InterruptRequested:
    request: Any  # JSON-able: one interrupt's value, or {"interrupts": [...]}


StreamEvent: TypeAlias = (
    TokenText | ToolCallsProposed | ToolFinished | AssistantReplied | InterruptRequested
)


def message_text(message: BaseMessage) -> str:
    """The text of a message: its string content, or its text blocks joined."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


@dataclass
class RunUsage:
    """Token usage summed over one run's model calls (``usage_metadata`` of each AI message;
    a provider that reports none adds a call and no tokens)."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    model_calls: int = 0

    def add(self, message: AIMessage) -> None:
        self.model_calls += 1
        usage: dict[str, Any] = dict(message.usage_metadata or {})
        self.input_tokens += int(usage.get("input_tokens", 0) or 0)
        self.output_tokens += int(usage.get("output_tokens", 0) or 0)
        self.total_tokens += int(usage.get("total_tokens", 0) or 0)

    def to_payload(self) -> dict[str, int]:
        return asdict(self)


class StreamTranslator:
    """Stateful across one run's stream (token buffer, seen message ids, usage); no I/O."""

    def __init__(self, seen_message_ids: Iterable[str] = ()) -> None:
        self._seen = set(seen_message_ids)
        self._tokens: list[str] = []
        self._buffered = 0
        #: Whether the current model call's first text has been recorded (an update ends a
        #: graph step: what streams after it is the next model call's).
        self._answering = False
        self.usage = RunUsage()

    def feed(self, mode: str, chunk: Any) -> list[StreamEvent]:
        if mode == "messages":
            return self._on_token(chunk)
        if mode == "updates":
            self._answering = False
            return [*self.flush(), *self._on_update(chunk)]
        return []

    def flush(self) -> list[StreamEvent]:
        """The buffered tokens as one record (call once more when the stream ends)."""
        if not self._tokens:
            return []
        text = "".join(self._tokens)
        self._tokens.clear()
        self._buffered = 0
        return [TokenText(text)]

    def _on_token(self, chunk: Any) -> list[StreamEvent]:
        message, metadata = chunk
        if not isinstance(message, AIMessageChunk | AIMessage):
            return []
        if isinstance(metadata, dict) and metadata.get("lc_agent_name") not in (
            None,
            CHATBOT_AGENT_NAME,
        ):
            return []
        text = message_text(message)
        if not text:
            return []
        self._tokens.append(text)
        self._buffered += len(text)
        if self._answering and self._buffered < TOKEN_FLUSH_CHARS:
            return []
        self._answering = True
        return self.flush()

    def _on_update(self, chunk: Any) -> list[StreamEvent]:
        if not isinstance(chunk, dict):
            return []
        events: list[StreamEvent] = []
        for node, update in chunk.items():
            if node == "__interrupt__":
                values = [getattr(i, "value", i) for i in update]
                request = values[0] if len(values) == 1 else {"interrupts": values}
                events.append(InterruptRequested(jsonable(request)))
                continue
            if not isinstance(update, dict):
                continue
            for message in update.get("messages", []) or []:
                event = self._on_message(message)
                if event is not None:
                    events.append(event)
        return events

    def _on_message(self, message: Any) -> StreamEvent | None:
        if not isinstance(message, BaseMessage):
            return None
        if message.id:
            if message.id in self._seen:
                return None
            self._seen.add(message.id)
        if isinstance(message, AIMessage):
            self.usage.add(message)
            if message.tool_calls:
                calls = tuple(
                    ProposedToolCall(
                        tool_call_id=str(call.get("id") or ""),
                        name=str(call.get("name") or ""),
                        args=jsonable(call.get("args")),
                    )
                    for call in message.tool_calls
                )
                return ToolCallsProposed(message_text(message), calls)
            return AssistantReplied(message_text(message))
        if isinstance(message, ToolMessage):
            status = "error" if message.status == "error" else "success"
            return ToolFinished(
                ToolOutcome(
                    tool_call_id=str(message.tool_call_id),
                    name=str(message.name or ""),
                    content=message_text(message),
                    status=status,
                )
            )
        return None
