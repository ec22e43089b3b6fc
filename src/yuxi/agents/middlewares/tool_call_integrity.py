"""Only a complete model response may call tools; every tool call is always answered.

Two rules (issue 17), for the chatbot and for SubAgents, whatever the provider:

1. **A cut-off or malformed call never executes.** A streamed response that stopped early
   (``finish_reason`` ``length``/``max_tokens``/``content_filter``, or no finish reason at all —
   the connection dropped) may carry tool calls whose arguments LangChain completed from partial
   JSON (``{"content": "I drink oolo`` becomes ``{"content": "I drink oolo"}``). Arguments that are
   not JSON at all arrive as ``invalid_tool_calls``. :class:`ToolCallIntegrityMiddleware` answers
   every such call itself with an error :class:`~langchain_core.messages.ToolMessage` before the
   tool node can run it, so no file changes; the agent loop then calls the model again and the
   model is told what happened. After :data:`~yuxi.limits.MODEL_REFUSED_RESPONSES_MAX` refused
   responses in a row the run fails with :class:`~yuxi.errors.ModelOutputTruncated`.
2. **A request never carries an unanswered call.** Before each model call, any assistant tool
   call without a tool message right after it (left by a cancelled, failed or crashed run, or by
   a thread saved before this rule) gets a synthetic error answer in the request. The executor
   also closes such calls in the checkpoint itself at the start of the next run
   (:func:`closing_messages`).

The approval middleware must not ask a human about a call that is already answered:
:func:`call_is_unanswered` is the ``when`` predicate the chatbot gives it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse, ToolCallRequest
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolCall,
    ToolMessage,
)

from yuxi.errors import ModelOutputTruncated
from yuxi.limits import MODEL_REFUSED_RESPONSES_MAX
from yuxi.utils.json_utils import compact_json

__all__ = [
    "COMPLETE_FINISH_REASONS",
    "ToolCallIntegrityMiddleware",
    "call_is_unanswered",
    "closing_messages",
    "unanswered_calls",
]

#: Where providers report why a response ended (OpenAI and compatibles, Anthropic, Ollama, ...).
_FINISH_KEYS = ("finish_reason", "stop_reason", "done_reason", "stopReason")
#: Reasons that say the response is whole. Anything else — ``length``, ``max_tokens``,
#: ``content_filter``, or no reason at all — means it may have been cut.
COMPLETE_FINISH_REASONS = frozenset(
    {"stop", "tool_calls", "function_call", "end_turn", "tool_use", "stop_sequence", "STOP"}
)
#: Marks an AI message whose calls this middleware refused (counted for the retry limit).
_REFUSED_FLAG = "yuxi_refused_tool_calls"


def _finish_reason(message: AIMessage) -> str | None:
    metadata = message.response_metadata or {}
    for key in _FINISH_KEYS:
        value = metadata.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _refusal(code: str, text: str) -> str:
    return compact_json({"status": "error", "code": code, "error": text})


def _refuse(message: AIMessage) -> tuple[AIMessage, list[ToolMessage]] | None:
    """The message with every unsafe call kept but answered by an error, or None if all is well."""
    reason = _finish_reason(message)
    complete = reason in COMPLETE_FINISH_REASONS
    if complete and not message.invalid_tool_calls:
        return None
    if not message.tool_calls and not message.invalid_tool_calls:
        return None  # a cut-off text answer calls nothing
    calls: list[ToolCall] = []
    answers: list[ToolMessage] = []
    for call in message.tool_calls:
        calls.append(call)
        if complete:
            continue  # only its invalid siblings are refused
        cut = f"finish_reason={reason}" if reason else "no finish reason"
        answers.append(
            ToolMessage(
                content=_refusal(
                    "model_output_truncated",
                    f"Not executed: your response was cut off ({cut}) before this call's "
                    "arguments were known to be complete. Nothing was changed. Send the call "
                    "again, complete (shorter if needed).",
                ),
                tool_call_id=str(call["id"]),
                name=call["name"],
                status="error",
            )
        )
    for invalid in message.invalid_tool_calls:
        call_id = str(invalid.get("id") or "")
        name = str(invalid.get("name") or "")
        if not call_id:
            continue  # a call without an id cannot be answered; it is dropped below
        calls.append(ToolCall(name=name, args={}, id=call_id, type="tool_call"))
        raw = str(invalid.get("args") or "")[:200]
        answers.append(
            ToolMessage(
                content=_refusal(
                    "invalid_tool_call",
                    "Not executed: the arguments of this call are not a JSON object "
                    f"(received {raw!r}). Nothing was changed. Send the call again with "
                    "arguments that are one complete JSON object matching the tool's schema.",
                ),
                tool_call_id=call_id,
                name=name,
                status="error",
            )
        )
    metadata = {**(message.response_metadata or {}), _REFUSED_FLAG: True}
    fixed = message.model_copy(
        update={"tool_calls": calls, "invalid_tool_calls": [], "response_metadata": metadata}
    )
    return fixed, answers


def _since_last_human(messages: Sequence[BaseMessage]) -> Sequence[BaseMessage]:
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return messages[index + 1 :]
    return messages


def _refused_in_a_row(messages: Sequence[BaseMessage]) -> int:
    count = 0
    for message in reversed(_since_last_human(messages)):
        if isinstance(message, AIMessage):
            if not (message.response_metadata or {}).get(_REFUSED_FLAG):
                break
            count += 1
    return count


def unanswered_calls(messages: Sequence[BaseMessage]) -> list[tuple[int, ToolCall]]:
    """``(index of the AI message, call)`` for every call not answered right after its message."""
    found: list[tuple[int, ToolCall]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, AIMessage):
            continue
        calls = list(message.tool_calls) + [
            ToolCall(name=str(c.get("name") or ""), args={}, id=c.get("id"), type="tool_call")
            for c in message.invalid_tool_calls
            if c.get("id")
        ]
        if not calls:
            continue
        answered: set[str] = set()
        after = index + 1
        while after < len(messages) and isinstance(messages[after], ToolMessage):
            answered.add(str(messages[after].tool_call_id))  # type: ignore[attr-defined]
            after += 1
        found.extend((index, call) for call in calls if str(call["id"]) not in answered)
    return found


def _closing(call: ToolCall, why: str) -> ToolMessage:
    return ToolMessage(
        content=_refusal("tool_call_not_completed", why),
        tool_call_id=str(call["id"]),
        name=call["name"],
        status="error",
    )


def closing_messages(messages: Sequence[BaseMessage], why: str) -> list[ToolMessage]:
    """Answers for the calls left open at the end of ``messages`` (to append before new input).

    Only the trailing run of messages can be closed by appending; older gaps (threads saved
    before this rule) are closed in each model request instead.
    """
    open_calls = unanswered_calls(messages)
    if not open_calls:
        return []
    last_ai = max(i for i, m in enumerate(messages) if isinstance(m, AIMessage))
    return [_closing(call, why) for index, call in open_calls if index == last_ai]


def _repaired(messages: Sequence[AnyMessage]) -> list[AnyMessage] | None:
    """``messages`` with a synthetic answer after every unanswered call (None: none missing)."""
    open_calls = unanswered_calls(messages)
    if not open_calls:
        return None
    by_index: dict[int, list[ToolCall]] = {}
    for index, call in open_calls:
        by_index.setdefault(index, []).append(call)
    repaired: list[AnyMessage] = []
    index = 0
    while index < len(messages):
        owner = index
        repaired.append(messages[index])
        index += 1
        if owner not in by_index:
            continue
        # The answers go after the tool messages that do follow this AI message.
        while index < len(messages) and isinstance(messages[index], ToolMessage):
            repaired.append(messages[index])
            index += 1
        repaired.extend(
            _closing(call, "This call was never completed (its run ended first).")
            for call in by_index[owner]
        )
    return repaired


def call_is_unanswered(request: ToolCallRequest) -> bool:
    """The approval middleware's ``when``: ask a human only about a call nobody has answered."""
    messages = request.state.get("messages", []) if isinstance(request.state, dict) else []
    call_id = request.tool_call.get("id")
    return not any(isinstance(m, ToolMessage) and m.tool_call_id == call_id for m in messages)


class ToolCallIntegrityMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Rule 1 on each model response, rule 2 on each model request (see the module docs)."""

    def _request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        repaired = _repaired(request.messages)
        return request if repaired is None else request.override(messages=repaired)

    def _response(
        self, request: ModelRequest[Any], response: ModelResponse[Any]
    ) -> ModelResponse[Any]:
        result = list(response.result)
        for position, message in enumerate(result):
            if not isinstance(message, AIMessage):
                continue
            refused = _refuse(message)
            if refused is None:
                continue
            if _refused_in_a_row(request.messages) + 1 > MODEL_REFUSED_RESPONSES_MAX:
                raise ModelOutputTruncated(
                    f"the model's response was cut off or malformed {MODEL_REFUSED_RESPONSES_MAX}"
                    " times in a row; its tool calls were not executed"
                )
            fixed, answers = refused
            result[position : position + 1] = [fixed, *answers]
            return ModelResponse(result=result, structured_response=response.structured_response)
        return response

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        request = self._request(request)
        return self._response(request, handler(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        request = self._request(request)
        return self._response(request, await handler(request))
