"""``ChatOpenAI`` whose conversation skips the OpenAI SDK's client-side request transform.

``chat.completions.create`` walks its whole request body against the ``CompletionCreateParams``
types before a byte is sent, with the GIL held. For Chat Completions requests the walk changes
nothing (none of the request types carries an alias or a format), but its cost grows with every
message of the thread, on every model call, and it blocks the event loop every other run of the
process shares. LangChain has already built ``messages`` and ``tools`` as plain JSON dicts, so
:class:`PassthroughChatOpenAI` hands those two fields to the SDK as ``extra_body``, which the SDK
merges into the JSON body *after* the transform, and leaves an empty list in their typed slots
(the SDK requires ``messages``; the slot keeps each key's place in the body).

What it guarantees: the JSON body sent is byte-for-byte the one ``ChatOpenAI`` sends
(``tests/unit/agents/test_openai_passthrough.py`` compares them, streamed and not, with tool
calls, tool results, images and CJK text). What it does not: a field the caller already put in
``extra_body`` keeps precedence and is left alone; a request with ``response_format`` (structured
output through the SDK's ``beta`` parse helpers) and one for the Responses API are sent as
``ChatOpenAI`` sends them, transform included.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_openai import ChatOpenAI

__all__ = ["BULK_FIELDS", "PassthroughChatOpenAI", "pass_bulk_fields_through"]

#: The request fields that grow with the thread and the tool set, already plain JSON.
BULK_FIELDS = ("messages", "tools")


def pass_bulk_fields_through(payload: dict[str, Any]) -> dict[str, Any]:
    """Move ``payload``'s non-empty :data:`BULK_FIELDS` lists into its ``extra_body``."""
    if "response_format" in payload:
        return payload
    extra = dict(payload.get("extra_body") or {})
    moved = False
    for name in BULK_FIELDS:
        value = payload.get(name)
        if isinstance(value, list) and value and name not in extra:
            extra[name] = value
            payload[name] = []
            moved = True
    if moved:
        payload["extra_body"] = extra
    return payload


class PassthroughChatOpenAI(ChatOpenAI):
    """``ChatOpenAI`` that sends ``messages`` and ``tools`` past the SDK's request transform."""

    def _get_request_payload(
        self,
        input_: LanguageModelInput,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        payload: dict[str, Any] = super()._get_request_payload(input_, stop=stop, **kwargs)
        return pass_bulk_fields_through(payload)
