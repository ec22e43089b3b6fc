"""Shaping history rows into the bounded tool responses (pure; the rows come from SQL).

Every text that came from a conversation (contents, snippets, titles, tool-call fields) is framed
by :func:`~yuxi.utils.prompt_framing.neutralize_markup` *before* it is cut to its budget: the
JSON string is its boundary, and tag-like text inside it is neutralised like memory text in the
memory block. A cut never creates a tag-like span, and the escapes are counted in the budgets.

Truncation flags: an item gets ``"truncated": true`` when one of its own fields was cut (content,
snippet, title, tool-call fields); a response gets it when it lost items to a budget, or (read)
when its title was cut. Nothing is padded with ``"truncated": false`` except the response flag,
which is always present.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from yuxi.limits import (
    FIRST_USER_LINE_BYTES,
    LIST_THREADS_RESPONSE_BYTES,
    READ_CONTENTS_BYTES,
    READ_MESSAGE_BYTES,
    READ_RESPONSE_BYTES,
    SEARCH_CONTEXT_BYTES,
    SEARCH_RESPONSE_BYTES,
    TITLE_BYTES,
    TOOL_ITEM_BYTES,
    TOOLS_TOTAL_BYTES,
)
from yuxi.repositories.lookback import (
    FIRST_LINE_CHARS,
    LEADING_BLANKS,
    Neighbour,
    SearchHits,
    ThreadRead,
)
from yuxi.services.lookback._budget import (
    build_snippet,
    drop_order,
    fit_json_text,
    fit_json_text_tail,
    fit_tool_call,
    json_bytes,
    json_text_bytes,
    locate_match,
)
from yuxi.utils.json_utils import compact_json
from yuxi.utils.prompt_framing import neutralize_markup, neutralize_with_positions


def _framed(value: str | None) -> str | None:
    return None if value is None else neutralize_markup(value)


# -- search ------------------------------------------------------------------------------------


def iso_utc(value: datetime) -> str:
    """ISO 8601 in UTC with ``Z``; microseconds only when there are any (so a listed time, passed
    back as ``before``, pages on exactly after it)."""
    moment = value.astimezone(UTC)
    fraction = f".{moment.microsecond:06d}" if moment.microsecond else ""
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


def neighbour_item(neighbour: Neighbour | None, side: str) -> dict[str, Any] | None:
    """A hit's neighbour: its id (an anchor for ``read_thread_messages``), its role, and at
    most ``SEARCH_CONTEXT_BYTES`` of its text nearest the hit — the end of the message
    ``before``, the start of the one ``after`` — framed, then cut on a character boundary
    (``"truncated": true`` when any of it was left out)."""
    if neighbour is None:
        return None
    text = neutralize_markup(neighbour.content)
    if side == "before":
        content, cut = fit_json_text_tail(text, SEARCH_CONTEXT_BYTES)
    else:
        content, cut = fit_json_text(text, SEARCH_CONTEXT_BYTES)
    item: dict[str, Any] = {
        "message_id": neighbour.message_id,
        "role": neighbour.role,
        "content": content,
    }
    if cut or neighbour.more:
        item["truncated"] = True
    return item


def _in_text(content: str, term: str) -> str:
    """What of ``term`` the snippet centres on: the term, or — a Snowball stem need not be a
    prefix of the word it came from (``happi`` from ``happy``, ``dure`` from ``during``) — its
    longest prefix of at least three characters that the text holds, case-insensitively."""
    lowered = content.lower()
    for end in range(len(term), min(3, len(term)) - 1, -1):
        if term[:end] in lowered:
            return term[:end]
    return term


def search_item(
    row: Any,
    *,
    rank: int,
    score: float,
    match: str,
    before: Neighbour | None = None,
    after: Neighbour | None = None,
) -> dict[str, Any]:
    """One ranked hit: a snippet around ``match`` (the phrase, or the hit's best term), its
    thread's capped title, its time, its rank (1 = best), and the visible messages just
    ``before`` and ``after`` it in its thread (left out at a thread's edge)."""
    content: str = row.content or ""
    match = _in_text(content, match)
    match_start = locate_match(content, match, None)
    safe = neutralize_with_positions(content)
    match_at = safe.position(match_start)
    snippet, snippet_cut = build_snippet(
        safe.text,
        match_at,
        safe.position(min(match_start + len(match), len(content))) - match_at,
        has_before=False,
        has_after=False,
    )
    title, title_cut = fit_json_text(neutralize_markup(row.title or ""), TITLE_BYTES)
    item: dict[str, Any] = {
        "rank": rank,
        "thread_id": row.thread_id,
        "title": title,
        "message_id": int(row.message_id),
        "role": row.role,
        "created_at": iso_utc(row.created_at),
        "score": round(score, 3),
        "content": snippet,
    }
    for side, neighbour in (("before", before), ("after", after)):
        shaped = neighbour_item(neighbour, side)
        if shaped is not None:
            item[side] = shaped
    if snippet_cut or title_cut:
        item["truncated"] = True
    return item


def search_response(found: SearchHits) -> dict[str, Any]:
    """The ranked hits as the tool's response: see :func:`fit_search`."""
    items = [
        search_item(
            hit.row,
            rank=rank,
            score=hit.score,
            match=hit.match,
            before=hit.before,
            after=hit.after,
        )
        for rank, hit in enumerate(found.hits, start=1)
    ]
    return fit_search(
        items, searched_messages=found.searched_messages, left_out_terms=found.left_out_terms
    )


def fit_search(
    items: list[dict[str, Any]],
    *,
    searched_messages: int | None = None,
    left_out_terms: Sequence[str] = (),
) -> dict[str, Any]:
    """``items`` best first; the lowest ranked are dropped until the JSON fits in 16 KiB.

    ``complete`` is true when every visible message was ranked; otherwise only the
    ``searched_messages`` of the windowed corpus were. ``left_out_terms``: query terms beyond
    ``SEARCH_MAX_TERMS`` that were not searched (named, framed and cut like any text).
    """
    response: dict[str, Any] = {"items": items, "truncated": False}
    response["complete"] = searched_messages is None
    if searched_messages is not None:
        response["searched_messages"] = searched_messages
    if left_out_terms:
        response["left_out_terms"] = [
            fit_json_text(neutralize_markup(term), TITLE_BYTES)[0] for term in left_out_terms
        ]
    while items and json_bytes(response) > SEARCH_RESPONSE_BYTES:
        items.pop()
        response["truncated"] = True
    return response


# -- read --------------------------------------------------------------------------------------


def message_item(row: Any) -> dict[str, Any]:
    content, cut = fit_json_text(neutralize_markup(row.content or ""), READ_MESSAGE_BYTES)
    item: dict[str, Any] = {"message_id": int(row.id), "role": row.role, "content": content}
    if cut:
        item["truncated"] = True
    return item


def tool_call_items(rows: Sequence[Any]) -> tuple[list[dict[str, Any]], bool]:
    """Rows newest first → items chronological, each ≤ 4 KiB, all ≤ 16 KiB (oldest dropped)."""
    items = [
        fit_tool_call(
            {
                "tool_call_id": _framed(row.tool_call_id),
                "name": _framed(row.name),
                "input": neutralize_markup(compact_json(row.input)),
                "output": _framed(row.output),
                "status": row.status,
                "error": _framed(row.error),
            },
            TOOL_ITEM_BYTES,
        )
        for row in reversed(rows)
    ]
    dropped = False
    while items and json_bytes(items) > TOOLS_TOTAL_BYTES:
        items.pop(0)
        dropped = True
    return items, dropped


def read_response(read: ThreadRead) -> dict[str, Any]:
    """A read window as the tool's response: see :func:`fit_read`."""
    tool_calls: list[dict[str, Any]] | None = None
    tools_cut = False
    if read.tool_rows is not None:
        tool_calls, tools_cut = tool_call_items(read.tool_rows)
    return fit_read(
        thread_id=read.thread_id,
        title=read.title,
        rows=read.rows,
        anchor=read.anchor,
        tool_calls=tool_calls,
        tools_cut=tools_cut,
    )


def fit_read(
    *,
    thread_id: str,
    title: str,
    rows: Sequence[Any],
    anchor: int | None,
    tool_calls: list[dict[str, Any]] | None,
    tools_cut: bool = False,
) -> dict[str, Any]:
    """Assemble a read within its budgets; ``anchor`` is an index into the chronological rows.

    Contents together ≤ 32 KiB, then the whole JSON ≤ 64 KiB: messages are given up farthest from
    the anchor first (no anchor: oldest first), never the anchor (no anchor: never the newest);
    then, if ever needed, the oldest tool calls. ``tool_calls=None`` leaves the key out.
    """
    shown_title, truncated = fit_json_text(neutralize_markup(title), TITLE_BYTES)
    truncated = truncated or tools_cut
    messages = [message_item(row) for row in rows]
    kept = [True] * len(messages)
    order = iter(drop_order(len(messages), anchor))

    def contents() -> int:
        return sum(json_text_bytes(m["content"]) for m, k in zip(messages, kept, strict=True) if k)

    while contents() > READ_CONTENTS_BYTES:
        kept[next(order)] = False  # the protected message alone is ≤ 8 KiB, so this ends
        truncated = True

    def build() -> dict[str, Any]:
        body: dict[str, Any] = {
            "thread_id": thread_id,
            "title": shown_title,
            "messages": [m for m, k in zip(messages, kept, strict=True) if k],
        }
        if tool_calls is not None:
            body["tool_calls"] = tool_calls
        body["truncated"] = truncated
        return body

    result = build()
    while json_bytes(result) > READ_RESPONSE_BYTES:
        victim = next(order, None)
        if victim is not None:
            kept[victim] = False
        elif tool_calls:
            tool_calls.pop(0)
        else:  # unreachable: one ≤ 8 KiB message, a ≤ 256 B title and the keys
            break
        truncated = True
        result = build()
    return result


# -- list threads ------------------------------------------------------------------------------


def first_line(prefix: str | None) -> str:
    """The first line of a first user message read as its first :data:`FIRST_LINE_CHARS`
    characters (left-trimmed): leading blank lines skipped, trailing blanks dropped when the
    line ends inside the prefix (a line that runs to its end is left for the budget to cut)."""
    if not prefix:
        return ""
    text = prefix.lstrip(LEADING_BLANKS)
    lines = text.splitlines()
    line = lines[0] if lines else ""
    ends_inside = len(line) < len(text) or len(prefix) < FIRST_LINE_CHARS
    return line.rstrip() if ends_inside else line


def thread_item(row: Any) -> dict[str, Any]:
    """One listed thread; ``"truncated": true`` when its title or first line was cut."""
    title, title_cut = fit_json_text(neutralize_markup(row.title or ""), TITLE_BYTES)
    line, line_cut = fit_json_text(
        neutralize_markup(first_line(row.first_text)), FIRST_USER_LINE_BYTES
    )
    item: dict[str, Any] = {
        "thread_id": row.thread_id,
        "title": title,
        "created_at": iso_utc(row.created_at),
        "last_message_at": iso_utc(row.last_at),
        "message_count": int(row.message_count),
        "first_user_line": line,
    }
    if title_cut or line_cut:
        item["truncated"] = True
    return item


def threads_response(
    rows: Sequence[Any], *, limit: int, max_bytes: int = LIST_THREADS_RESPONSE_BYTES
) -> dict[str, Any]:
    """``rows`` newest first (up to ``limit + 1``) → ``{"items", "truncated", "has_more"}``.

    ``has_more``: older listable threads exist (a row beyond ``limit``, or an item dropped).
    The oldest items are dropped until the compact JSON fits in ``max_bytes``; then
    ``truncated`` is true.
    """
    items = [thread_item(row) for row in rows[:limit]]
    response: dict[str, Any] = {
        "items": items,
        "truncated": False,
        "has_more": len(rows) > limit,
    }
    while items and json_bytes(response) > max_bytes:
        items.pop()
        response["truncated"] = True
        response["has_more"] = True
    return response
