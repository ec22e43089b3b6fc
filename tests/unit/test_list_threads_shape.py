"""``list_threads`` without a server: the first line, the times, the response budget, ``before``,
and the offline model's sentence for a listing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import ToolCall, ToolMessage

from yuxi.agents.models import describe_result
from yuxi.errors import InvalidArgument
from yuxi.limits import (
    FIRST_USER_LINE_BYTES,
    LIST_THREADS_MAX_ITEMS,
    LIST_THREADS_RESPONSE_BYTES,
    THREAD_ID_MAX_CHARS,
    TITLE_BYTES,
)
from yuxi.repositories.lookback import FIRST_LINE_CHARS
from yuxi.services.lookback import (
    first_line,
    iso_utc,
    json_bytes,
    json_text_bytes,
    parse_time,
    thread_item,
    threads_response,
)
from yuxi.utils.json_utils import compact_json
from yuxi.utils.prompt_framing import find_markup

AT = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def row(i: int = 0, *, title: str = "t", first_text: str | None = "hi", count: int = 2) -> Any:
    return SimpleNamespace(
        thread_id=f"thread-{i}",
        title=title,
        created_at=AT - timedelta(days=1),
        last_at=AT - timedelta(minutes=i),
        message_count=count,
        first_text=first_text,
    )


# -- the first line ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "line"),
    [
        (None, ""),
        ("", ""),
        ("hello", "hello"),
        ("hello  \nworld", "hello"),
        ("\n\n \u3000 hello\nworld", "hello"),
        ("a\r\nb", "a"),
        ("line\u2028next", "line"),
        ("  \n \n ", ""),
        ("trailing   ", "trailing"),  # the whole (short) message: its blanks go
    ],
)
def test_first_line(prefix: str | None, line: str) -> None:
    assert first_line(prefix) == line


def test_a_line_that_fills_the_prefix_keeps_its_end_for_the_budget() -> None:
    prefix = "x" * (FIRST_LINE_CHARS - 1) + " "
    assert first_line(prefix) == prefix  # not rstripped: it is cut by bytes, and marked


# -- times ---------------------------------------------------------------------------------------


def test_iso_utc() -> None:
    assert iso_utc(AT) == "2026-03-01T09:30:00Z"
    east = datetime(2026, 3, 1, 17, 30, 0, 5, tzinfo=timezone(timedelta(hours=8)))
    assert iso_utc(east) == "2026-03-01T09:30:00.000005Z"
    assert parse_time("before", iso_utc(east)) == east  # a listed time pages on exactly


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("", None),
        ("2026-03-01", AT.replace(hour=0, minute=0)),
        ("2026-03-01T09:30:00", AT),
        ("2026-03-01T09:30Z", AT),
        ("2026-03-01T17:30:00+08:00", AT),
    ],
)
def test_before(value: object, expected: datetime | None) -> None:
    assert parse_time("before", value) == expected


@pytest.mark.parametrize("value", ["2026-02-30", "tomorrow", "2026-W09-1", 1, b"2026-03-01"])
def test_bad_before(value: object) -> None:
    with pytest.raises(InvalidArgument, match="before must be an ISO 8601"):
        parse_time("before", value)


# -- items and the response budget -----------------------------------------------------------------


def test_item_shape_and_flags() -> None:
    assert thread_item(row()) == {
        "thread_id": "thread-0",
        "title": "t",
        "created_at": "2026-02-28T09:30:00Z",
        "last_message_at": "2026-03-01T09:30:00Z",
        "message_count": 2,
        "first_user_line": "hi",
    }
    cut = thread_item(row(first_text="语" * FIRST_LINE_CHARS))
    assert cut["truncated"] is True
    assert json_text_bytes(cut["first_user_line"]) <= FIRST_USER_LINE_BYTES
    assert thread_item(row(first_text=None))["first_user_line"] == ""


def test_framing_comes_before_the_cut() -> None:
    title = "a" * (TITLE_BYTES - 9) + "<system>"  # 255 bytes; framed, 258
    item = thread_item(row(title=title, first_text="<|im_start|>system"))
    assert item["truncated"] is True
    assert json_text_bytes(item["title"]) <= TITLE_BYTES
    assert find_markup(item["title"]) == []
    assert item["first_user_line"] == "&lt;|im_start|>system"


def test_oldest_items_go_first_and_say_so() -> None:
    rows = [row(i, title="标题" * 40) for i in range(6)]
    whole = threads_response(rows, limit=5)
    assert [i["thread_id"] for i in whole["items"]] == [f"thread-{i}" for i in range(5)]
    assert whole["truncated"] is False and whole["has_more"] is True
    budget = json_bytes(whole) - 1
    cut = threads_response(rows, limit=5, max_bytes=budget)
    assert [i["thread_id"] for i in cut["items"]] == [f"thread-{i}" for i in range(4)]
    assert cut["truncated"] is True and cut["has_more"] is True
    assert json_bytes(cut) <= budget
    last = threads_response(rows[:2], limit=5)
    assert last["has_more"] is False


def test_the_largest_listing_fits_the_budget_without_a_cut() -> None:
    """20 items of the largest size each field can have: the budget is a guard only."""
    worst = SimpleNamespace(
        thread_id="f" * THREAD_ID_MAX_CHARS,  # the server's ids are 32 hex digits
        title='"' * 500,
        created_at=AT,
        last_at=AT.replace(microsecond=999_999),
        message_count=2**63 - 1,
        first_text="\\" * FIRST_LINE_CHARS,
    )
    response = threads_response([worst] * (LIST_THREADS_MAX_ITEMS + 1), limit=20)
    assert len(response["items"]) == LIST_THREADS_MAX_ITEMS
    assert response["truncated"] is False
    assert json_bytes(response) <= LIST_THREADS_RESPONSE_BYTES
    assert compact_json(response).count('"truncated":true') == LIST_THREADS_MAX_ITEMS


# -- the offline model's sentence ------------------------------------------------------------------


def _describe(payload: str, args: dict[str, Any]) -> str:
    call = ToolCall(name="list_threads", args=args, id="c1", type="tool_call")
    return describe_result(ToolMessage(content=payload, tool_call_id="c1"), call)


def test_offline_answer_for_a_listing() -> None:
    listing = threads_response([row(0, title="Tea"), row(1, title="")], limit=1)
    text = _describe(compact_json(listing), {})
    assert text.splitlines() == [
        "Your 1 most recent past conversation:",
        "- «Tea» (1 Mar 2026, 09:30 UTC, 2 messages): hi",
        "(There are older ones.)",
    ]
    empty = compact_json({"items": [], "truncated": False, "has_more": False})
    assert _describe(empty, {"before": "2026-03-01"}) == (
        "I found no past conversations before 2026-03-01."
    )
