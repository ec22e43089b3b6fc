"""The product against the OpenAI Chat Completions wire format, end to end (issue 15).

The model here is a **scripted** HTTP server (``tests/support/scripted_openai.py``): it
streams what a real OpenAI-compatible provider streams (tool-call arguments split across chunks,
a final usage chunk, 429 and 500 answers) and refuses what OpenAI refuses, so these tests check
our integration against the wire format, not any model's judgement. The product runs with
``YUXI_MODEL=openai:<name>`` and ``YUXI_MODEL_BASE_URL`` pointing at it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.factories import chat_once, make_user, memory_file, sha256_of
from tests.support.scripted_openai import ScriptedOpenAI, ToolCallScript, Turn, running
from yuxi.bootstrap import Container
from yuxi.runtime.worker import Worker
from yuxi.services.chat.views import run_view
from yuxi.settings import Settings

FACT = "我住在杭州，每天早上喝龙井茶"


@pytest.fixture
def scripted() -> Iterator[ScriptedOpenAI]:
    yield from running()


def _settings(database_url: str, tmp_path: Path, url: str, **extra: Any) -> Settings:
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        db_pool_size=20,
        model="openai:gpt-scripted",
        model_base_url=url,
        model_api_key="test-key",
        model_max_tokens=321,
        model_max_retries=1,
        heartbeat_seconds=0.1,
        **extra,
    )


@pytest.fixture
def settings(
    database_url: str, tmp_path: Path, scripted: ScriptedOpenAI, request: pytest.FixtureRequest
) -> Settings:
    extra = getattr(request, "param", {})
    return _settings(database_url, tmp_path, scripted.base_url, **extra)


def _tool(request: dict[str, Any], name: str) -> dict[str, Any]:
    (tool,) = [t for t in request.get("tools", []) if t["function"]["name"] == name]
    return dict(tool["function"])


async def test_remember_through_the_wire_then_recall_in_a_new_thread(
    container: Container, worker: Worker, scripted: ScriptedOpenAI
) -> None:
    uid = await make_user(container, memory=True)
    chat = container.services.chat
    args = json.dumps({"content": FACT}, ensure_ascii=False)
    scripted.script(
        Turn(status=429),  # retried by the client, invisible to the run
        Turn(
            content="好的，我记下了。",
            tool_calls=[ToolCallScript("remember_memory", args)],
            finish_reason="tool_calls",
            usage=(120, 30),
        ),
        Turn(content="已保存到记忆。", usage=(150, 8)),
    )
    first = await chat_once(
        container, worker, uid, (await chat.create_thread(uid)).thread_id, "记住我住在杭州"
    )
    assert first.status == "completed", first.error_message
    assert FACT in memory_file(container, uid).read_text("utf-8")
    # What we sent: max tokens, and remember_memory's schema is exactly content / replaces.
    sent = scripted.requests[-1]
    assert sent.get("max_completion_tokens", sent.get("max_tokens")) == 321
    schema = _tool(sent, "remember_memory")["parameters"]
    assert set(schema["properties"]) == {"content", "replaces"}
    assert schema["required"] == ["content"]
    # Usage of the run: both model calls summed (the refused 429 used none).
    usage = run_view(first).usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (270, 38, 308)
    assert usage.model_calls == 2

    scripted.script(Turn(content="你住在杭州，喝龙井茶。"))
    second = await chat_once(
        container, worker, uid, (await chat.create_thread(uid)).thread_id, "我住哪？"
    )
    assert second.status == "completed"
    system = scripted.requests[-1]["messages"][0]
    assert system["role"] == "system" and FACT in system["content"]


async def test_a_provider_that_keeps_failing_ends_the_run_with_a_clear_code(
    container: Container, worker: Worker, scripted: ScriptedOpenAI
) -> None:
    uid = await make_user(container, memory=True)
    thread = (await container.services.chat.create_thread(uid)).thread_id
    scripted.script(Turn(status=500), Turn(status=500))  # the first try and its one retry
    run = await chat_once(container, worker, uid, thread, "hello")
    assert (run.status, run.error_code) == ("failed", "model_unavailable")
    assert "scripted" not in (run.error_message or "")  # the provider's own text never leaks
    scripted.script(Turn(status=429), Turn(status=429))
    run = await chat_once(container, worker, uid, thread, "hello again")
    assert (run.status, run.error_code) == ("failed", "model_rate_limited")


@pytest.mark.parametrize("settings", [{"run_model_call_limit": 3}], indirect=True)
async def test_a_model_that_loops_on_a_tool_call_stops_at_the_model_call_limit(
    container: Container, worker: Worker, scripted: ScriptedOpenAI
) -> None:
    uid = await make_user(container, memory=True)
    thread = (await container.services.chat.create_thread(uid)).thread_id
    search = ToolCallScript("search_thread_messages", '{"query": "tea"}')
    scripted.script(*[Turn(tool_calls=[search], finish_reason="tool_calls")] * 10)
    run = await chat_once(container, worker, uid, thread, "search forever")
    assert (run.status, run.error_code) == ("failed", "run_limit_exceeded")
    assert len(scripted.requests) == 3
    assert run_view(run).usage is not None and run_view(run).usage.model_calls == 3  # type: ignore[union-attr]


@pytest.mark.parametrize("settings", [{"run_tool_call_limit": 2}], indirect=True)
async def test_a_batch_of_tool_calls_over_the_limit_runs_none_of_them(
    container: Container, worker: Worker, scripted: ScriptedOpenAI
) -> None:
    uid = await make_user(container, memory=True)
    thread = (await container.services.chat.create_thread(uid)).thread_id
    before = sha256_of(memory_file(container, uid))
    calls = [
        ToolCallScript("remember_memory", json.dumps({"content": f"fact {i}"}), id=f"c{i}")
        for i in range(3)
    ]
    scripted.script(Turn(tool_calls=calls, finish_reason="tool_calls"))
    run = await chat_once(container, worker, uid, thread, "remember three things")
    assert (run.status, run.error_code) == ("failed", "run_limit_exceeded")
    assert sha256_of(memory_file(container, uid)) == before  # nothing half-written


async def test_a_model_that_never_stops_talking_is_cut_at_max_tokens(
    container: Container, worker: Worker, scripted: ScriptedOpenAI
) -> None:
    uid = await make_user(container, memory=True)
    thread = (await container.services.chat.create_thread(uid)).thread_id
    scripted.script(Turn(content=" ".join(["blah"] * 5000)))
    run = await chat_once(container, worker, uid, thread, "talk")
    assert run.status == "completed"
    assert len(run.output["reply"].split()) == 321  # the provider honoured our max_tokens


@pytest.mark.parametrize("settings", [{"run_timeout_seconds": 1.0}], indirect=True)
async def test_a_run_past_its_wall_clock_fails_as_run_timeout(
    container: Container, worker: Worker, scripted: ScriptedOpenAI
) -> None:
    uid = await make_user(container, memory=True)
    thread = (await container.services.chat.create_thread(uid)).thread_id
    scripted.script(Turn(content="late", delay=5.0))
    run = await chat_once(container, worker, uid, thread, "slow")
    assert (run.status, run.error_code) == ("failed", "run_timeout")
    # The thread stays usable.
    scripted.script(Turn(content="fast"))
    nxt = await chat_once(container, worker, uid, thread, "again")
    assert nxt.status == "completed" and nxt.output["reply"] == "fast"
