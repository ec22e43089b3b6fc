"""One offline reply as a provider would send it: token usage, stop sequences, ``max_tokens``,
the finish reason, and the same reply as one message or as a stream of chunks.

Token counts are deterministic and documented, not a real tokenizer's: a text counts
``ceil(UTF-8 bytes / 4)`` tokens (about what BPE tokenizers give for English; CJK text, three
bytes a character, counts about one token per character pair). Input tokens are every input
message's text, the name and JSON arguments of every tool call in it, and the JSON of the bound
tools; output tokens are the reply's text and its tool calls' names and JSON arguments.

``stop`` cuts the reply's text before the first stop sequence (finish reason ``stop``);
``max_tokens`` cuts a longer text to ``max_tokens * 4`` bytes on a character boundary (finish
reason ``length``). A tool-call turn has no text and is never cut. Every response says why it
ended (``tool_calls`` or ``stop`` when whole): tool calls from a response without a complete
finish reason are never executed (``ToolCallIntegrityMiddleware``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolCall
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from yuxi.agents.models._offline_commands import content_text

__all__ = [
    "BYTES_PER_TOKEN",
    "Reply",
    "count_tokens",
    "finish",
    "input_tokens",
    "reply_chunks",
    "reply_result",
    "text_pieces",
]

BYTES_PER_TOKEN = 4
#: A streamed text is at most this many chunks (short texts: about one word a chunk).
_MAX_TEXT_CHUNKS = 64
#: A run of text without spaces (CJK) is split into pieces of at most this many characters.
_MAX_PIECE_CHARS = 8
_PIECE = re.compile(r"\s*\S+|\s+")


def count_tokens(text: str) -> int:
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)


def _call_tokens(call: ToolCall) -> int:
    return count_tokens(call["name"] + json.dumps(call["args"], ensure_ascii=False))


def input_tokens(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> int:
    total = sum(count_tokens(content_text(message)) for message in messages)
    total += sum(
        _call_tokens(call)
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
    )
    if tools:
        total += count_tokens(json.dumps(list(tools), ensure_ascii=False, sort_keys=True))
    return total


@dataclass(frozen=True)
class Reply:
    text: str
    calls: tuple[ToolCall, ...]
    finish_reason: str
    usage: UsageMetadata
    model_name: str

    def metadata(self) -> dict[str, Any]:
        return {"finish_reason": self.finish_reason, "model_name": self.model_name}


def _cut(text: str, stop: Sequence[str], max_tokens: int | None) -> tuple[str, str]:
    """The text as sent and the finish reason of a text answer."""
    cuts = [at for s in stop if s and (at := text.find(s)) >= 0]
    if cuts:
        text = text[: min(cuts)]
    if max_tokens is not None and count_tokens(text) > max_tokens:
        kept = text.encode("utf-8")[: max_tokens * BYTES_PER_TOKEN]
        return kept.decode("utf-8", errors="ignore"), "length"
    return text, "stop"


def finish(
    message: AIMessage,
    *,
    prompt_tokens: int,
    stop: Sequence[str],
    max_tokens: int | None,
    model_name: str,
) -> Reply:
    """``message`` (the model's decision) as it is sent: cut, counted, with its finish reason."""
    calls = tuple(message.tool_calls)
    if calls:
        text, reason = content_text(message), "tool_calls"
    else:
        text, reason = _cut(content_text(message), stop, max_tokens)
    output = count_tokens(text) + sum(_call_tokens(call) for call in calls)
    usage = UsageMetadata(
        input_tokens=prompt_tokens, output_tokens=output, total_tokens=prompt_tokens + output
    )
    return Reply(text, calls, reason, usage, model_name)


def reply_result(reply: Reply) -> ChatResult:
    message = AIMessage(
        content=reply.text,
        tool_calls=list(reply.calls),
        usage_metadata=reply.usage,
        response_metadata=reply.metadata(),
    )
    return ChatResult(generations=[ChatGeneration(message=message)])


def text_pieces(text: str) -> list[str]:
    """``text`` in stream order: about a word a piece, at most ``_MAX_TEXT_CHUNKS`` pieces;
    ``"".join(text_pieces(text)) == text``."""
    small = [
        word[i : i + _MAX_PIECE_CHARS]
        for word in _PIECE.findall(text)
        for i in range(0, len(word), _MAX_PIECE_CHARS)
    ]
    size = max(1, math.ceil(len(small) / _MAX_TEXT_CHUNKS))
    return ["".join(small[i : i + size]) for i in range(0, len(small), size)]


def reply_chunks(reply: Reply) -> Iterator[ChatGenerationChunk]:
    """The reply as a provider streams it: the text in pieces, each tool call's JSON arguments
    in two ``tool_call_chunks``, then a last chunk (``chunk_position="last"``) with the usage
    and the finish reason. Added up, the chunks are exactly :func:`reply_result`'s message."""
    for piece in text_pieces(reply.text):
        yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
    for index, call in enumerate(reply.calls):
        args = json.dumps(call["args"], ensure_ascii=False)
        half = len(args) // 2
        first = tool_call_chunk(name=call["name"], args=args[:half], id=call["id"], index=index)
        rest = tool_call_chunk(args=args[half:], index=index)
        for part in (first, rest):
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[part]))
    last = AIMessageChunk(
        content="",
        chunk_position="last",
        usage_metadata=reply.usage,
        response_metadata=reply.metadata(),
    )
    yield ChatGenerationChunk(message=last)
