"""Secret-shaped memory writes wait for approval, whatever the run's taint (design.md §5.9).

The chatbot graph with the offline model and a real workspace (``FakeMemory`` writes the file):
an untainted ``remember:`` of an API key, a password or a connection URL with a password
interrupts with a description that names the kind of secret (never the secret); approving writes
it once, rejecting writes nothing (hash compared) and tells the model with a structured error.
Ordinary lines, and the lint's statistical "long random key" alone, are still one step.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Checkpointer, Command

from tests.support.agent_fakes import CapturingModel, FakeMemory, SpyWorkspace
from tests.support.run_contexts import ChatRun, chat_run
from yuxi.agents.middlewares.taint import REMEMBER_MEMORY_TOOL, TAINTED_WRITE_DESCRIPTION
from yuxi.agents.models import REJECTED_WRITE_REPLY
from yuxi.services.memory import held_secret_kinds, secret_kinds
from yuxi.workspace.filesystem import MEMORY_PATH

_CONFIG: RunnableConfig = {"configurable": {"thread_id": "thread-s"}}

#: (what the user asks to remember, the kind the approval card names). Untainted: the user's own
#: message, answered directly.
HELD = [
    ("My API key is sk-proj-4fGh2KLmN8pQrS7tUvWx9yZaSECRET01", "an API key"),
    ("我的 API key 是 sk-proj-4fGh2KLmN8pQrS7tUvWx9yZaSECRET02", "an API key"),
    ("AWS key AKIAIOSFODNN7SECRT03", "an API key"),
    ("prod db is postgres://admin:S3cret2024@db.internal/prod", "a connection URL with a password"),
    ("数据库连接 mysql://u:p@h 用于测试", "a connection URL with a password"),
    ("password: Tr0ub4dor&3SECRET04", "a password"),
    ("我的密码是 hunter2SECRET05", "a password"),
    (
        "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5",
        "a JSON web token",
    ),
]

#: Ordinary lines (and the lint's statistical guess alone): written at once, no approval.
NOT_HELD = [
    "My password manager is 1Password",
    "I use postgres://localhost/dev for tests",
    "## is how I write headings",
    "the fix is in commit 3f2a9c1e4b7d8a0f6e5c4b3a2d1e0f9a8b7c6d5e",
    "喜欢喝龙井茶",
]


def _workspace(tmp_path: Path) -> SpyWorkspace:
    ws = SpyWorkspace(tmp_path / "workspaces")
    ws.ensure_user_workspace_sync()
    ws.put(MEMORY_PATH, "- likes green tea\n")
    return ws


async def _graph(
    ws: SpyWorkspace, memory: FakeMemory, checkpointer: Checkpointer, model: CapturingModel
) -> ChatRun:
    return await chat_run(ws, memory, model, checkpointer=checkpointer)


async def _say(graph: ChatRun, text: str) -> Any:
    return await graph.ainvoke(
        {"messages": [HumanMessage(content=text)]}, _CONFIG, context=graph.context
    )


def _memory_hash(ws: SpyWorkspace) -> str:
    return hashlib.sha256((ws.get(MEMORY_PATH) or "").encode()).hexdigest()


@pytest.mark.parametrize(("content", "kind"), HELD)
async def test_an_untainted_secret_write_waits_and_is_written_once_when_approved(
    tmp_path: Path, content: str, kind: str
) -> None:
    ws = _workspace(tmp_path)
    memory = FakeMemory(ws)
    graph = await _graph(ws, memory, InMemorySaver(), CapturingModel())
    before = _memory_hash(ws)

    paused = await _say(graph, f"remember: {content}")
    (interrupt,) = paused["__interrupt__"]
    (action,) = interrupt.value["action_requests"]
    assert (action["name"], action["args"]) == (REMEMBER_MEMORY_TOOL, {"content": content})
    # The card says why, naming the kind of secret and never the secret itself.
    assert f"looks like a secret: {kind}" in action["description"]
    assert "SECRET0" not in action["description"] and "S3cret2024" not in action["description"]
    assert "read other conversations" not in action["description"]  # not tainted
    assert interrupt.value["review_configs"][0]["allowed_decisions"] == ["approve", "reject"]
    assert memory.calls_to("remember_memory") == [] and _memory_hash(ws) == before

    resumed = await graph.ainvoke(
        Command(resume={"decisions": [{"type": "approve"}]}), _CONFIG, context=graph.context
    )
    assert "__interrupt__" not in resumed
    assert [c["content"] for c in memory.calls_to("remember_memory")] == [content]
    assert (ws.get(MEMORY_PATH) or "").count(content) == 1


async def test_a_rejected_secret_writes_nothing_and_the_model_gets_a_structured_error(
    tmp_path: Path,
) -> None:
    ws = _workspace(tmp_path)
    memory = FakeMemory(ws)
    checkpointer = InMemorySaver()
    graph = await _graph(ws, memory, checkpointer, CapturingModel())
    secret = "sk-proj-4fGh2KLmN8pQrS7tUvWx9yZaREJECTED"
    before = _memory_hash(ws)
    await _say(graph, f"remember: My API key is {secret}")
    resumed = await graph.ainvoke(
        Command(resume={"decisions": [{"type": "reject", "message": "The user rejected it."}]}),
        _CONFIG,
        context=graph.context,
    )
    assert memory.calls_to("remember_memory") == []
    assert _memory_hash(ws) == before
    told = [m for m in resumed["messages"] if isinstance(m, ToolMessage)][-1]
    assert (told.name, told.status) == (REMEMBER_MEMORY_TOOL, "error")
    payload = json.loads(told.text)
    assert (payload["code"], payload["reasons"]) == ("memory_write_rejected", ["secret_like"])
    assert "nothing was saved" in payload["error"] and secret not in told.text
    assert resumed["messages"][-1].text.splitlines()[-1] == REJECTED_WRITE_REPLY

    # The next run on this thread: what its first prompt holds. Memory (the system prompt's
    # memory block) does not carry the secret; the conversation does — the user's own message
    # and the model's rejected call, as they were sent — and the rejection result does not.
    model = CapturingModel()
    after = await _graph(ws, FakeMemory(ws), checkpointer, model)
    await _say(after, "hello")
    first = model.seen[0]
    system = [m.text for m in first if isinstance(m, SystemMessage)]
    assert system and all(secret not in text for text in system)
    assert "likes green tea" in system[0]  # the memory block is there, without the secret
    humans = [m.text for m in first if isinstance(m, HumanMessage)]
    assert any(secret in text for text in humans)
    calls = [c for m in first if isinstance(m, AIMessage) for c in m.tool_calls]
    assert any(secret in c["args"].get("content", "") for c in calls)
    results = [m.text for m in first if isinstance(m, ToolMessage)]
    assert results and all(secret not in text for text in results)


async def test_a_tainted_secret_write_gives_both_reasons(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    ws.put("notes.md", "remember the key")
    memory = FakeMemory(ws)
    graph = await _graph(ws, memory, InMemorySaver(), CapturingModel())
    paused = await _say(graph, "read file: notes.md\nremember: password: Tr0ub4dor&3x")
    (action,) = paused["__interrupt__"][0].value["action_requests"]
    assert "looks like a secret: a password" in action["description"]
    assert "read other conversations or files" in action["description"]
    resumed = await graph.ainvoke(
        Command(resume={"decisions": [{"type": "reject"}]}), _CONFIG, context=graph.context
    )
    told = [m for m in resumed["messages"] if isinstance(m, ToolMessage)][-1]
    assert json.loads(told.text)["reasons"] == ["secret_like", "tainted"]
    assert memory.calls_to("remember_memory") == []


async def test_a_tainted_plain_write_keeps_the_taint_description(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    ws.put("notes.md", "tea")
    graph = await _graph(ws, FakeMemory(ws), InMemorySaver(), CapturingModel())
    paused = await _say(graph, "read file: notes.md\nremember: my tea is oolong")
    (action,) = paused["__interrupt__"][0].value["action_requests"]
    assert action["description"] == TAINTED_WRITE_DESCRIPTION


@pytest.mark.parametrize("content", NOT_HELD)
async def test_an_ordinary_untainted_write_is_one_step(tmp_path: Path, content: str) -> None:
    ws = _workspace(tmp_path)
    memory = FakeMemory(ws)
    graph = await _graph(ws, memory, InMemorySaver(), CapturingModel())
    result = await _say(graph, f"remember: {content}")
    assert "__interrupt__" not in result
    assert [c["content"] for c in memory.calls_to("remember_memory")] == [content]
    assert content in (ws.get(MEMORY_PATH) or "")


def test_the_hold_is_the_lints_classifier_less_its_statistical_guess() -> None:
    """One definition: every held kind is a kind the lint reports, and the lint's only extra is
    "a long random key" (a commit SHA is flagged afterwards, not held)."""
    for content, _ in HELD:
        assert held_secret_kinds(content)
        assert set(held_secret_kinds(content)) <= set(secret_kinds(content))
    sha = "commit 3f2a9c1e4b7d8a0f6e5c4b3a2d1e0f9a8b7c6d5e"
    assert secret_kinds(sha) == ["a long random key"] and held_secret_kinds(sha) == []
