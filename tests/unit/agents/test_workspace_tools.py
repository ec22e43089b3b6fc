"""Generic workspace file tools and the delegation tool, called directly."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from tests.support.agent_fakes import (
    CTX,
    UID,
    FakeMemory,
    SpyWorkspace,
    call_schema,
    forged_identity,
)
from tests.support.run_contexts import forged_context, memory_of, run_context
from yuxi.agents.context import RunIdentity
from yuxi.agents.tools import (
    DELEGATE_TOOL_NAME,
    SENSITIVE_TOOLS,
    make_delegate_tool,
    make_read_workspace_tool,
    make_workspace_tools,
)
from yuxi.agents.tools.delegate import SubagentReply
from yuxi.limits import TOOL_READ_MAX_BYTES
from yuxi.workspace.filesystem import MEMORY_PATH


class Raw:
    """A context passed to the tool as it is (not wrapped in a run context)."""

    def __init__(self, value: object) -> None:
        self.value = value


def _runtime(context: object) -> ToolRuntime[Any, Any]:
    return ToolRuntime(
        state={"messages": []},
        context=context,
        config={},
        stream_writer=lambda _chunk: None,
        tool_call_id="call-1",
        store=None,
    )


def _setup(tmp_path: Path, *, allow_memory_file: bool = True) -> tuple[dict[str, BaseTool], Any]:
    ws = SpyWorkspace(tmp_path / "workspaces")
    ws.ensure_user_workspace_sync()
    memory = FakeMemory(ws)
    tools = make_workspace_tools(memory=memory, files=memory, allow_memory_file=allow_memory_file)
    for tool in tools:
        # Where _call finds the test's workspace: the tools themselves hold none.
        tool.metadata = {"workspace": ws}
    return {t.name: t for t in tools}, memory


async def _call(tool: BaseTool, context: object = CTX, **args: Any) -> dict[str, Any]:
    """Call ``tool`` in a run of ``context`` (a RunIdentity: a memory-on run context with the
    test's workspace, its checks skipped; ``Raw(value)``: ``value`` itself)."""
    assert isinstance(tool, StructuredTool)
    assert tool.coroutine is not None
    if isinstance(context, Raw):
        context = context.value
    elif isinstance(context, RunIdentity):
        workspace = (tool.metadata or {})["workspace"]
        context = forged_context(context, workspace, memory=memory_of(""))
    return _payload(await tool.coroutine(**args, runtime=_runtime(context)))


def _payload(message: ToolMessage) -> dict[str, Any]:
    """The payload of a tool's ToolMessage; its status must agree with the payload's."""
    assert isinstance(message, ToolMessage) and message.tool_call_id == "call-1"
    result: dict[str, Any] = json.loads(str(message.content))
    assert (message.status == "error") == (result["status"] == "error")
    return result


def test_sensitive_list_and_schemas() -> None:
    assert SENSITIVE_TOOLS == ("write_workspace_file", "edit_workspace_file")
    assert "remember_memory" not in SENSITIVE_TOOLS


async def test_model_visible_arguments(tmp_path: Path) -> None:
    tools, _ = _setup(tmp_path)
    assert list(tools) == ["read_workspace_file", "write_workspace_file", "edit_workspace_file"]
    props = {n: list(call_schema(t)["properties"]) for n, t in tools.items()}
    assert props == {
        "read_workspace_file": ["path"],
        "write_workspace_file": ["path", "content"],
        "edit_workspace_file": ["path", "old", "new"],
    }


async def test_write_read_edit_round_trip(tmp_path: Path) -> None:
    tools, memory = _setup(tmp_path)
    ws = memory.workspace

    written = await _call(tools["write_workspace_file"], path="notes/今天.md", content="喝茶\n")
    assert written == {"status": "written", "path": "notes/今天.md", "size": len("喝茶\n".encode())}
    assert ws.get("notes/今天.md") == "喝茶\n"

    read = await _call(tools["read_workspace_file"], path="/notes/今天.md")
    assert read == {"status": "ok", "path": "notes/今天.md", "content": "喝茶\n", "size": 7}

    edited = await _call(tools["edit_workspace_file"], path="notes/今天.md", old="茶", new="咖啡")
    assert edited["status"] == "edited"
    assert ws.get("notes/今天.md") == "喝咖啡\n"
    assert memory.calls_to("agent_write_memory_file") == []


async def test_edit_needs_exactly_one_match(tmp_path: Path) -> None:
    tools, memory = _setup(tmp_path)
    memory.workspace.put("a.md", "x x")
    for old in ("x", "y"):
        out = await _call(tools["edit_workspace_file"], path="a.md", old=old, new="z")
        assert out["code"] == "edit_conflict"
    assert (await _call(tools["edit_workspace_file"], path="a.md", old="", new="z"))[
        "code"
    ] == "invalid_argument"
    assert memory.workspace.get("a.md") == "x x"


@pytest.mark.parametrize("path", ["../escape.md", "a/../../b", "a//b", "", "a\\b", "//etc/passwd"])
async def test_unsafe_paths_are_structured_errors(tmp_path: Path, path: str) -> None:
    tools, memory = _setup(tmp_path)
    for name in ("read_workspace_file", "write_workspace_file"):
        args: dict[str, Any] = {"path": path}
        if name == "write_workspace_file":
            args["content"] = "x"
        out = await _call(tools[name], **args)
        assert out["status"] == "error"
        assert out["code"] == "unsafe_path"
    assert not (tmp_path / "escape.md").exists()
    assert memory.workspace.writes == []


async def test_symlinks_are_refused(tmp_path: Path) -> None:
    tools, memory = _setup(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("OUTSIDE")
    os.symlink(outside, memory.workspace.directory / "link.txt")
    out = await _call(tools["read_workspace_file"], path="link.txt")
    assert out["code"] == "symlink_refused"
    out = await _call(tools["edit_workspace_file"], path="link.txt", old="OUT", new="IN")
    assert out["code"] == "symlink_refused"
    assert outside.read_text() == "OUTSIDE"


async def test_missing_file_and_non_text(tmp_path: Path) -> None:
    tools, memory = _setup(tmp_path)
    assert (await _call(tools["read_workspace_file"], path="nope.md"))["code"] == "file_not_found"
    memory.workspace.replace_file_sync("bin.dat", b"\xff\x00\xfe")
    assert (await _call(tools["read_workspace_file"], path="bin.dat"))["code"] == "not_text"


async def test_read_is_bounded_on_a_character_boundary(tmp_path: Path) -> None:
    tools, memory = _setup(tmp_path)
    memory.workspace.put("big.md", "a" + "界" * 30000)
    out = await _call(tools["read_workspace_file"], path="big.md")
    assert out["truncated"] is True
    assert out["size"] <= TOOL_READ_MAX_BYTES
    assert "\ufffd" not in out["content"]
    assert ("a" + "界" * 30000).startswith(out["content"])


async def test_memory_file_goes_through_the_same_lock_writer(tmp_path: Path) -> None:
    tools, memory = _setup(tmp_path)
    memory.workspace.put(MEMORY_PATH, "likes tea\n")

    out = await _call(tools["write_workspace_file"], path="agents/MEMORY.md", content="new\n")
    assert out["status"] == "written"
    assert memory.calls_to("agent_write_memory_file") == [
        {
            "uid": CTX.uid,
            "run_id": CTX.run_id,
            "data": b"new\n",
            "tool_call_id": "call-1",
            "if_match": None,
        }
    ]

    out = await _call(tools["edit_workspace_file"], path="/agents/MEMORY.md", old="new", new="old")
    assert out["status"] == "edited"
    edit_call = memory.calls_to("agent_write_memory_file")[1]
    assert edit_call["data"] == b"old\n"
    assert edit_call["if_match"] is not None  # the version just read: no lost update
    assert memory.calls_to("read_memory_file") == [{"uid": CTX.uid}]
    assert memory.workspace.get(MEMORY_PATH) == "old\n"


async def test_memory_file_is_refused_when_not_allowed(tmp_path: Path) -> None:
    tools, memory = _setup(tmp_path, allow_memory_file=False)
    memory.workspace.put(MEMORY_PATH, "SECRET-MEMORY")
    memory.workspace.forbid_memory_reads = True
    for name, args in (
        ("read_workspace_file", {"path": "agents/MEMORY.md"}),
        ("write_workspace_file", {"path": "/agents/MEMORY.md", "content": "x"}),
        ("edit_workspace_file", {"path": "agents/MEMORY.md", "old": "S", "new": "x"}),
    ):
        out = await _call(tools[name], **args)
        assert out["code"] == "forbidden_path", name
    assert memory.workspace.memory_reads == []
    assert memory.calls == []
    assert memory.workspace.get(MEMORY_PATH) == "SECRET-MEMORY"


@pytest.mark.parametrize(
    "context",
    [
        Raw(None),
        Raw({"uid": CTX.uid}),
        Raw(CTX),
        replace(CTX, uid="someone-else"),
        forged_identity(thread_id=""),
    ],
    ids=["missing", "dict", "bare-identity", "other-user", "blank"],
)
async def test_identity_must_be_the_workspace_owner(tmp_path: Path, context: object) -> None:
    tools, memory = _setup(tmp_path)
    memory.workspace.put("a.md", "x")
    for name, args in (
        ("read_workspace_file", {"path": "a.md"}),
        ("write_workspace_file", {"path": "a.md", "content": "y"}),
        ("edit_workspace_file", {"path": "a.md", "old": "x", "new": "y"}),
    ):
        assert (await _call(tools[name], context, **args))["code"] == "unauthorized_run"
    assert memory.workspace.get("a.md") == "x"


async def test_read_only_tool_for_subagents(tmp_path: Path) -> None:
    ws = SpyWorkspace(tmp_path / "workspaces", forbid_memory_reads=True)
    ws.ensure_user_workspace_sync()
    ws.put("notes.md", "hello")
    tool = make_read_workspace_tool()
    sub = run_context(ws, replace(CTX, worker_id=None))
    assert tool.name == "read_workspace_file"
    assert (await _call(tool, Raw(sub), path="notes.md"))["content"] == "hello"
    assert (await _call(tool, Raw(sub), path="agents/MEMORY.md"))["code"] == "forbidden_path"
    # Even a forged SubAgent context that carries memory gets no MEMORY.md from this tool.
    forged = forged_context(replace(CTX, worker_id=None), ws, memory=memory_of("x"))
    assert (await _call(tool, Raw(forged), path="agents/MEMORY.md"))["code"] == "forbidden_path"
    assert ws.memory_reads == []


async def test_memory_file_is_refused_in_a_run_without_memory(tmp_path: Path) -> None:
    """The tools of a memory-on graph still refuse MEMORY.md to a run whose context has none."""
    tools, memory = _setup(tmp_path)
    memory.workspace.put(MEMORY_PATH, "SECRET-MEMORY")
    memory.workspace.forbid_memory_reads = True
    no_memory = Raw(run_context(memory.workspace))
    for name, args in (
        ("read_workspace_file", {"path": "agents/MEMORY.md"}),
        ("write_workspace_file", {"path": "agents/MEMORY.md", "content": "x"}),
    ):
        assert (await _call(tools[name], no_memory, **args))["code"] == "forbidden_path"
    assert memory.calls == []
    assert memory.workspace.get(MEMORY_PATH) == "SECRET-MEMORY"


async def test_each_call_acts_in_the_workspace_of_its_own_run(tmp_path: Path) -> None:
    """One set of tools, two users' runs: each call reads and writes only its run's files."""
    tools, memory = _setup(tmp_path)
    other_ws = SpyWorkspace(tmp_path / "workspaces", uid="user-2")
    other_ws.ensure_user_workspace_sync()
    memory.workspace.put("notes.md", "ONE-MARKER")
    other_ws.put("notes.md", "TWO-MARKER")
    other = run_context(other_ws, replace(CTX, uid="user-2", run_id="run-2"))
    mine = run_context(memory.workspace)
    read = tools["read_workspace_file"]
    assert (await _call(read, Raw(other), path="notes.md"))["content"] == "TWO-MARKER"
    assert (await _call(read, Raw(mine), path="notes.md"))["content"] == "ONE-MARKER"
    out = await _call(tools["write_workspace_file"], Raw(other), path="b.md", content="two")
    assert out["status"] == "written"
    (write,) = memory.calls_to("agent_rewrite_file")
    assert write["identity"] == other.identity and UID != "user-2"


# -- delegation -----------------------------------------------------------------------------------


def _ws(tmp_path: Path) -> SpyWorkspace:
    ws = SpyWorkspace(tmp_path / "workspaces")
    ws.ensure_user_workspace_sync()
    return ws


async def test_delegate_tool_schema_and_call(tmp_path: Path) -> None:
    seen: list[str] = []

    async def run_subagent(task: str) -> SubagentReply:
        seen.append(task)
        return SubagentReply(reply="done")

    tool = make_delegate_tool()
    assert isinstance(tool, StructuredTool)
    assert tool.name == DELEGATE_TOOL_NAME == "delegate_to_subagent"
    assert list(call_schema(tool)["properties"]) == ["task"]
    assert tool.coroutine is not None
    context = run_context(_ws(tmp_path), subagents=run_subagent)
    out = (await tool.coroutine(task="  sum up notes  ", runtime=_runtime(context))).content
    assert out == '{"status":"ok","reply":"done"}'
    assert seen == ["sum up notes"]


async def test_delegate_fails_closed_and_never_crashes(tmp_path: Path) -> None:
    calls: list[str] = []

    async def run_subagent(task: str) -> SubagentReply:
        calls.append(task)
        raise RuntimeError("child exploded")

    tool = make_delegate_tool()
    assert isinstance(tool, StructuredTool)
    assert tool.coroutine is not None
    ws = _ws(tmp_path)
    top = run_context(ws, subagents=run_subagent)
    refused = [
        run_context(ws, replace(CTX, worker_id=None), subagents=run_subagent),  # a SubAgent
        run_context(ws),  # a run without a runner
        CTX,  # a bare identity
        None,
    ]
    for context in refused:
        out = _payload(await tool.coroutine(task="x", runtime=_runtime(context)))
        assert out["code"] == "unauthorized_run", context
    assert _payload(await tool.coroutine(task="  ", runtime=_runtime(top)))["code"] == (
        "invalid_argument"
    )
    assert calls == []
    out = _payload(await tool.coroutine(task="x", runtime=_runtime(top)))
    assert out["code"] == "subagent_failed"
    assert calls == ["x"]
