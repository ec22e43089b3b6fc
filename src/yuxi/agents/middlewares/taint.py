"""The write policy: a memory write after untrusted input waits for the user's approval.

A run is *tainted* from the moment low-trust data enters it after the last user message: the
output of any tool (history lookback, a workspace file read, a SubAgent, anything) except
``remember_memory``'s own result. A ``remember_memory`` call in a tainted run goes through the
same human-in-the-loop interrupt as the generic file write tools (approve or reject only); an
untainted call, the user's explicit request answered directly, runs at once.

Taint is read from the run's state, never from what the model says: a ``ToolMessage`` is made by
the graph's tool node (or, for a rejected call, by the approval middleware), never by the model.
The rule is a pure function of the messages, so it gives the same answer when the interrupted
step runs again on resume, as :class:`~langchain.agents.middleware.HumanInTheLoopMiddleware`
requires of its ``when`` predicate.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain.agents.middleware import InterruptOnConfig, ToolCallRequest
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

__all__ = [
    "REMEMBER_MEMORY_TOOL",
    "TAINTED_WRITE_DESCRIPTION",
    "call_is_tainted",
    "run_is_tainted",
    "tainted_memory_write_approval",
]

#: The one memory write tool; its own results never taint a run.
REMEMBER_MEMORY_TOOL = "remember_memory"

#: What the approval card says about a paused memory write.
TAINTED_WRITE_DESCRIPTION = (
    "Save this to long-term memory? The request came after data from outside your message "
    "(past conversations, files or other tool output) entered this run."
)


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
    """The ``when`` predicate: gate this tool call when its run is tainted."""
    return run_is_tainted(request.state.get("messages", []))


def tainted_memory_write_approval() -> InterruptOnConfig:
    """The approval config of ``remember_memory``: only in a tainted run; approve or reject."""
    return InterruptOnConfig(
        allowed_decisions=["approve", "reject"],
        description=TAINTED_WRITE_DESCRIPTION,
        when=call_is_tainted,
    )
