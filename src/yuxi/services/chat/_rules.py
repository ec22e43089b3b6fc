"""The rules of what a user sends to chat, each defined once: a client's request id, a title a
user sets, and the title a thread takes from its first message."""

from __future__ import annotations

import uuid

from yuxi.errors import InvalidArgument
from yuxi.limits import AUTO_TITLE_MAX_CHARS, REQUEST_ID_MAX_CHARS, TITLE_MAX_CHARS
from yuxi.utils.string_utils import check_text
from yuxi.vocabulary import SERVER_REQUEST_ID_PREFIXES

__all__ = ["auto_title", "check_request_id", "check_thread_title"]


def check_request_id(request_id: object) -> str:
    """A client's request id: printable ASCII, at most ``REQUEST_ID_MAX_CHARS``, and never in
    the server's namespace (:data:`~yuxi.vocabulary.SERVER_REQUEST_ID_PREFIXES`). Otherwise a
    chat run posted as ``resume:<run id>`` would hold that interruption's decision id, and every
    later approve or reject would be answered by it (issue 27 §6)."""
    if request_id is None:
        return uuid.uuid4().hex
    if isinstance(request_id, str) and request_id.startswith(SERVER_REQUEST_ID_PREFIXES):
        raise InvalidArgument(
            "request_id must not start with "
            + " or ".join(repr(p) for p in SERVER_REQUEST_ID_PREFIXES)
            + ": those ids are the server's"
        )
    if (
        not isinstance(request_id, str)
        or not request_id.strip()
        or len(request_id) > REQUEST_ID_MAX_CHARS
        or not request_id.isprintable()
        or not request_id.isascii()
    ):
        raise InvalidArgument(
            f"request_id must be 1..{REQUEST_ID_MAX_CHARS} printable ASCII characters"
        )
    return request_id


def check_thread_title(value: object) -> str:
    """A thread title a user sets: stripped, not blank, at most ``TITLE_MAX_CHARS`` characters
    of storable text (the one rule of a rename)."""
    return check_text("title", value, max_chars=TITLE_MAX_CHARS, strip=True)


def auto_title(first_message: str) -> str:
    """The title a thread gets from its first message: the first non-blank line, cut to
    ``AUTO_TITLE_MAX_CHARS`` characters (never inside a character) with an ellipsis when cut."""
    line = next((ln.strip() for ln in first_message.splitlines() if ln.strip()), "")
    if len(line) <= AUTO_TITLE_MAX_CHARS:
        return line
    return line[: AUTO_TITLE_MAX_CHARS - 1].rstrip() + "…"
