"""The write policy: a memory write waits for the user's approval after untrusted input, or when
what it would save looks like a secret.

Either reason is enough (design.md §5.9):

* *tainted* — low-trust data entered the run after the last user message: the output of any tool
  (history lookback, a workspace file read, a SubAgent, anything) except ``remember_memory``'s
  own result. That text may have asked for the write, not the user;
* *secret-shaped* — the ``content`` to save is what the memory lint classes ``secret_like`` (API
  keys, private keys, JSON web tokens, passwords, connection URLs with a password, card
  numbers), whatever the run's taint: MEMORY.md goes into every later prompt, to the model
  provider, so even the user's own "remember my API key" is put to them once more. The test is
  :func:`yuxi.services.memory.held_secret_kinds` — the lint's own classifier
  (:func:`~yuxi.services.memory.secret_kinds`) less its one statistical guess, "a long random
  key" (32+ random-looking characters with no prefix or keyword: it fits commit SHAs, ids and
  hashes as well, and a hold on every one of them would be clicked through unread; the lint
  still flags it afterwards).

A held ``remember_memory`` goes through the same human-in-the-loop interrupt as the generic file
write tools (approve or reject only); its description says why, in words the approval card shows
(the kinds of secret, never the secret). Any other call, the user's plain request answered
directly, runs at once. A rejected write answers the model with a structured error
(:class:`~yuxi.errors.MemoryWriteRejected`, code ``memory_write_rejected``, with the reasons)
instead of LangChain's free text: nothing was saved, and it should not try again.

Taint is read from the run's state, never from what the model says: a ``ToolMessage`` is made by
the graph's tool node (or, for a rejected call, by the approval middleware), never by the model.
Both rules are pure functions of the messages and the call's arguments, so they give the same
answer when the interrupted step runs again on resume, as
:class:`~langchain.agents.middleware.HumanInTheLoopMiddleware` requires of its ``when`` predicate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain.agents.middleware import (
    HumanInTheLoopMiddleware,
    InterruptOnConfig,
    ToolCallRequest,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langgraph.runtime import Runtime

from yuxi.agents.tools.tool_result import error_payload
from yuxi.errors import MemoryWriteRejected
from yuxi.services.memory import held_secret_kinds
from yuxi.utils.json_utils import compact_json
from yuxi.vocabulary import MEMORY_WRITE_HOLD_REASONS

__all__ = [
    "REMEMBER_MEMORY_TOOL",
    "SECRET_REASON",
    "TAINTED_WRITE_DESCRIPTION",
    "TAINT_REASON",
    "ApprovalMiddleware",
    "call_is_tainted",
    "memory_write_approval",
    "memory_write_description",
    "memory_write_reasons",
    "rejected_memory_write",
    "run_is_tainted",
    "secret_shaped",
]

#: The one memory write tool; its own results never taint a run.
REMEMBER_MEMORY_TOOL = "remember_memory"

#: What the approval card says about a memory write held because the run is tainted.
TAINTED_WRITE_DESCRIPTION = (
    "This needs your approval because this run read other conversations or files before asking "
    "to remember: that text may have asked for it, not you."
)

#: The reason codes a held write carries (the rejected write's ``reasons`` lists them).
SECRET_REASON, TAINT_REASON = MEMORY_WRITE_HOLD_REASONS


def run_is_tainted(messages: Sequence[BaseMessage]) -> bool:
    """True when a tool result other than ``remember_memory``'s follows the last user message.

    A result with no tool name counts as untrusted (fail closed). A new user message starts
    clean: what came before it was the previous request's.
    """
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return False
        if isinstance(message, ToolMessage) and message.name != REMEMBER_MEMORY_TOOL:
            return True
    return False


def call_is_tainted(request: ToolCallRequest) -> bool:
    """True when this tool call's run is tainted."""
    return run_is_tainted(request.state.get("messages", []))


def secret_shaped(args: Mapping[str, Any]) -> list[str]:
    """The kinds of secret the lint sees in a ``remember_memory`` call's ``content`` (none when
    the arguments are not well formed: the tool refuses those itself and writes nothing)."""
    content = args.get("content")
    return held_secret_kinds(content) if isinstance(content, str) else []


def memory_write_reasons(tool_call: ToolCall, messages: Sequence[BaseMessage]) -> list[str]:
    """Why this ``remember_memory`` call must wait: ``secret_like``, ``tainted``, both or none."""
    reasons = [SECRET_REASON] if secret_shaped(tool_call.get("args") or {}) else []
    if run_is_tainted(messages):
        reasons.append(TAINT_REASON)
    return reasons


def _memory_write_is_held(request: ToolCallRequest) -> bool:
    return bool(memory_write_reasons(request.tool_call, request.state.get("messages", [])))


def _listing(kinds: Sequence[str]) -> str:
    return kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " and " + kinds[-1]


def memory_write_description(tool_call: ToolCall, state: Any, runtime: Any = None) -> str:
    """The approval card's reason (LangChain's description factory): the kinds of secret seen,
    never the matched text, and/or the taint."""
    kinds = secret_shaped(tool_call.get("args") or {})
    tainted = run_is_tainted(state.get("messages", []) if isinstance(state, Mapping) else [])
    if not kinds:
        return TAINTED_WRITE_DESCRIPTION
    text = (
        f"This needs your approval because it looks like a secret: {_listing(kinds)}. Memory "
        "goes into every later prompt the assistant sends to its model provider."
    )
    if tainted:
        text += (
            " Also, this run read other conversations or files before asking to remember: "
            "that text may have asked for it, not you."
        )
    return text


def memory_write_approval() -> InterruptOnConfig:
    """The approval config of ``remember_memory``: when tainted or secret-shaped; approve or
    reject; the description says why."""
    return InterruptOnConfig(
        allowed_decisions=["approve", "reject"],
        description=memory_write_description,
        when=_memory_write_is_held,
    )


def rejected_memory_write(message: ToolMessage, reasons: Sequence[str]) -> ToolMessage:
    """The model's result for a rejected ``remember_memory``: the structured error."""
    error = MemoryWriteRejected(
        "The user rejected this memory write when asked to approve it; nothing was saved. Do "
        "not save it again, in memory or in a file, unless the user asks.",
        details={"reasons": list(reasons)},
    )
    return message.model_copy(update={"content": compact_json(error_payload(error))})


class ApprovalMiddleware(HumanInTheLoopMiddleware[Any, Any, Any]):
    """LangChain's human-in-the-loop middleware, with a structured result for a rejected
    ``remember_memory`` (the other tools keep LangChain's text)."""

    def after_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        update = super().after_model(state, runtime)
        if not update:
            return update
        messages: list[BaseMessage] = list(update.get("messages", []))
        calls = {
            call["id"]: call
            for m in messages
            if isinstance(m, AIMessage)
            for call in m.tool_calls
            if call.get("id")
        }
        history = state.get("messages", [])
        for position, message in enumerate(messages):
            if (
                isinstance(message, ToolMessage)
                and message.name == REMEMBER_MEMORY_TOOL
                and message.status == "error"
            ):
                call = calls.get(message.tool_call_id)
                reasons = memory_write_reasons(call, history) if call is not None else []
                messages[position] = rejected_memory_write(message, reasons)
        return {**update, "messages": messages}
