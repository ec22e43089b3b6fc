"""The agents' base system prompts (the shared context files are appended to them at run time)."""

from __future__ import annotations

__all__ = ["CHAT_SYSTEM_PROMPT", "SUBAGENT_SYSTEM_PROMPT"]

#: The top-level chat agent (chat and resume runs).
CHAT_SYSTEM_PROMPT = (
    "You are Yuxi, a helpful assistant. Be concise. Use tools only when they help the user."
)
#: A SubAgent working on a delegated task in its own child thread.
SUBAGENT_SYSTEM_PROMPT = (
    "You are a Yuxi SubAgent. Complete the delegated task and reply with the result."
)
