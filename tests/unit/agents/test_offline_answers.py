"""The offline model's final answers say in words what each of its tool results means.

The UI's tool card shows the JSON; the answer never repeats it (no braces, no ``"status"``, no
field the sentence does not need, such as MEMORY.md's path or a version id).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from tests.support.agent_fakes import OFFLINE_TOOL_NAMES, named_tool
from yuxi.agents.models import OfflineChatModel


def _answer(command: str, result: dict[str, Any] | str, *, status: str = "success") -> str:
    """The final answer after ``command``'s one tool call got ``result``."""
    model = OfflineChatModel().bind_tools([named_tool(n) for n in OFFLINE_TOOL_NAMES])
    human = HumanMessage(content=command)
    call = model.invoke([human])
    assert isinstance(call, AIMessage)
    (tool_call,) = call.tool_calls
    content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    told = ToolMessage(
        content=content, tool_call_id=tool_call["id"], name=tool_call["name"], status=status
    )
    final = model.invoke([human, call, told])
    assert isinstance(final, AIMessage) and final.tool_calls == []
    assert "{" not in final.text and '"status"' not in final.text
    return final.text


_UPDATED = {
    "status": "updated",
    "path": "/agents/MEMORY.md",
    "size": 10,
    "start_line": 1,
    "end_line": 1,
    "version_id": "mv_VERSIONMARK",
}


def test_remember_updated_corrected_unchanged() -> None:
    assert _answer("remember: 我喜欢乌龙茶", _UPDATED) == "Saved to memory: «我喜欢乌龙茶»"
    assert (
        _answer("correct memory: likes tea => likes coffee", _UPDATED)
        == "Corrected in memory: «likes tea» → «likes coffee»"
    )
    assert _answer("remember: tea", {**_UPDATED, "status": "unchanged"}) == (
        "That is already in memory."
    )
    assert "mv_VERSIONMARK" not in _answer("remember: tea", _UPDATED)


def test_a_refused_or_rejected_memory_write_says_why() -> None:
    refused = {
        "status": "error",
        "code": "memory_quota_exceeded",
        "error": "this run may write at most 5 times",
        "quota_remaining": {"writes": 0},
    }
    assert _answer("remember: tea", refused, status="error") == (
        "I couldn't save that: this run may write at most 5 times"
    )
    # A human's rejection is plain text, quoted as it is.
    assert _answer("remember: tea", "User rejected it: not now", status="error") == (
        "I couldn't save that: User rejected it: not now"
    )


def test_any_other_error_names_the_tool_and_the_message() -> None:
    error = {"status": "error", "code": "not_found", "error": "thread not found or not visible"}
    assert _answer("read thread: t-9", error, status="error") == (
        "The read_thread_messages call did not succeed: thread not found or not visible"
    )


#: Server thread ids are 32 hex digits; an answer names a thread by its title and a date instead.
_HEX_ID = re.compile(r"[0-9a-f]{32}")
_TH1 = "3f2a" + "0" * 27 + "1"
_TH2 = "3f2a" + "0" * 27 + "2"


def test_search_lists_what_it_found_in_words() -> None:
    found = {
        "items": [
            {
                "rank": 1,
                "thread_id": _TH1,
                "title": "旧对话",
                "message_id": 7,
                "role": "user",
                "created_at": "2026-03-03T09:30:00Z",
                "content": "…I drink\noolong tea…",
            },
            {
                "rank": 2,
                "thread_id": _TH2,
                "title": "",
                "message_id": 9,
                "role": "assistant",
                "created_at": "2025-12-31T23:59:59.250000Z",
                "content": "oolong",
                "truncated": True,
            },
        ],
        "truncated": True,
        "complete": False,
    }
    answer = _answer("search history: oolong", found)
    assert answer.splitlines() == [
        "I found 2 messages in your past conversations for «oolong»:",
        "- «旧对话» (3 Mar 2026, 09:30 UTC, you): …I drink oolong tea…",
        "- «Untitled» (31 Dec 2025, 23:59 UTC, me): oolong",
        "(Lower-ranked matches were left out.)",
        "(Only the newest messages were ranked for the commonest words.)",
    ]
    assert _HEX_ID.search(answer) is None and "message 7" not in answer
    assert _answer("search history: 茶", {"items": [], "truncated": False}) == (
        "I found nothing in your past conversations for «茶»."
    )


def test_a_time_that_does_not_parse_is_left_out_not_shown_raw() -> None:
    odd = {
        "items": [
            {"thread_id": _TH1, "title": "T", "role": "user", "created_at": "soon", "content": "x"}
        ],
        "truncated": False,
    }
    assert _answer("search history: x", odd).splitlines()[1] == "- «T» (you): x"


def test_a_listing_names_threads_by_title_and_date() -> None:
    listed = {
        "items": [
            {
                "thread_id": _TH1,
                "title": "Tea",
                "created_at": "2026-03-01T08:00:00Z",
                "last_message_at": "2026-03-02T18:05:00.123456Z",
                "message_count": 1,
                "first_user_line": "which tea?",
            }
        ],
        "truncated": False,
        "has_more": False,
    }
    answer = _answer("recent threads", listed)
    assert answer.splitlines() == [
        "Your 1 most recent past conversation:",
        "- «Tea» (2 Mar 2026, 18:05 UTC, 1 message): which tea?",
    ]
    assert _HEX_ID.search(answer) is None


def test_read_lists_the_thread_in_words() -> None:
    read = {
        "thread_id": _TH1,
        "title": "Tea",
        "messages": [
            {"message_id": 7, "role": "user", "content": "remember: oolong"},
            {"message_id": 8, "role": "assistant", "content": "Saved."},
        ],
        "tool_calls": [
            {
                "tool_call_id": "c1",
                "name": "remember_memory",
                "input": '{"content":"oolong"}',
                "output": '{"status":"updated"}',
                "status": "success",
                "error": None,
            }
        ],
        "truncated": True,
    }
    answer = _answer(f"read thread: {_TH1} with tools", read)
    assert answer.splitlines() == [
        "Thread «Tea»:",
        "- you: remember: oolong",
        "- me: Saved.",
        "- tool call remember_memory: success",
        "(Some of it was left out to stay within the reading budget.)",
    ]
    assert _HEX_ID.search(answer) is None


def test_files_read_and_written() -> None:
    text = "# Notes\n\n- 周一开会\n"
    read = {"status": "ok", "path": "notes/a.md", "content": text, "size": 22}
    assert _answer("read file: notes/a.md", read) == text
    empty = {"status": "ok", "path": "notes/e.md", "content": "", "size": 0}
    assert _answer("read file: notes/e.md", empty) == "notes/e.md is empty."
    cut = {**read, "size": 8, "content": "# Notes\n", "truncated": True}
    assert _answer("read file: notes/a.md", cut) == (
        "# Notes\n\n(Only the first 8 bytes of notes/a.md.)"
    )
    written = {"status": "written", "path": "notes/a.md", "size": 12}
    assert _answer("write file notes/a.md: 周一开会", written) == "Wrote notes/a.md (12 bytes)."


def test_delegation_gives_the_subagents_reply() -> None:
    reply = {"status": "ok", "thread_id": "child-1", "reply": "The notes say: buy tea."}
    assert _answer("delegate: summarise notes.md", reply) == (
        "The SubAgent replied: The notes say: buy tea."
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"result": 3}', "my_adder answered with result: 3."),
        ("It's sunny.", "my_adder answered: It's sunny."),
        ('{"rows": [1, 2], "ok": true}', "my_adder answered with rows: [1, 2]; ok: True."),
    ],
)
def test_another_tools_result_is_said_plainly(content: str, expected: str) -> None:
    model = OfflineChatModel().bind_tools([named_tool("my_adder")])
    human = HumanMessage(content="add")
    call = AIMessage(
        content="",
        tool_calls=[{"name": "my_adder", "args": {}, "id": "c1", "type": "tool_call"}],
    )
    told = ToolMessage(content=content, tool_call_id="c1", name="my_adder")
    assert model.invoke([human, call, told]).text == expected
