"""build_agent_input_context: AGENTS.md + USER.md (≤ 64 KiB each, cut marked), never MEMORY.md."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.agent_fakes import CTX, UID, SpyWorkspace, forged_identity
from tests.support.run_contexts import forged_context, run_context
from yuxi.agents.context import (
    CONTEXT_FILE_MAX_BYTES,
    RunIdentity,
    build_agent_input_context,
    trusted_context,
)
from yuxi.errors import UnauthorizedRun
from yuxi.workspace.filesystem import AGENTS_PATH, MEMORY_PATH, USER_PATH

MEMORY_MARKER = "MEMORY-MARKER-7f3a9c"


def _workspace(tmp_path: Path) -> SpyWorkspace:
    ws = SpyWorkspace(tmp_path / "workspaces", forbid_memory_reads=True)
    ws.ensure_user_workspace_sync()
    ws.put(MEMORY_PATH, f"secret memory {MEMORY_MARKER}\n")
    return ws


def _section(prompt: str, path: str) -> str:
    """Text of the section that holds ``path`` (up to the next section or the end)."""
    start = prompt.index(f"({path})\n\n") + len(f"({path})\n\n")
    end = prompt.find("\n\n## ", start)
    return prompt[start:] if end == -1 else prompt[start:end]


async def test_assembles_base_agents_and_user_and_never_reads_memory(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    ws.put(AGENTS_PATH, "Always answer in haiku.\n")
    ws.put(USER_PATH, "The user is called 小明.\n")

    result = await build_agent_input_context(workspace=ws, identity=CTX, base_prompt="BASE RULES")

    prompt = result.system_prompt
    assert prompt.startswith("BASE RULES")
    assert "Always answer in haiku." in prompt
    assert "The user is called 小明." in prompt
    assert prompt.index("haiku") < prompt.index("小明")
    assert MEMORY_MARKER not in prompt
    assert "memory_data" not in prompt
    assert result.identity == CTX
    assert [f.path for f in result.files] == [AGENTS_PATH, USER_PATH]
    assert not any(f.truncated for f in result.files)
    assert ws.memory_reads == []
    assert sorted(ws.reads) == sorted([AGENTS_PATH, USER_PATH])


async def test_memory_reads_really_raise_in_this_fixture(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    with pytest.raises(AssertionError):
        await ws.read_file_prefix(MEMORY_PATH, 10)


@pytest.mark.parametrize("lead", ["", "a", "ab"])
async def test_cjk_file_is_cut_on_a_character_boundary_with_a_marker(
    tmp_path: Path, lead: str
) -> None:
    ws = _workspace(tmp_path)
    original = lead + "记忆边界测试" * 8000  # ~144 KB of 3-byte characters
    ws.put(AGENTS_PATH, original)
    ws.put(USER_PATH, "短")

    result = await build_agent_input_context(workspace=ws, identity=CTX, base_prompt="base")

    section = _section(result.system_prompt, AGENTS_PATH)
    assert len(section.encode("utf-8")) <= CONTEXT_FILE_MAX_BYTES
    assert "\ufffd" not in section
    marker = "…[truncated: only the first 64 KiB of agents/AGENTS.md is shown]"
    assert section.endswith(marker)
    kept = section[: -len(marker)].rstrip("\n")
    assert original.startswith(kept)
    # As much as fits: one more character would exceed the budget.
    assert len(kept.encode("utf-8")) + 3 + len(("\n" + marker).encode("utf-8")) > (
        CONTEXT_FILE_MAX_BYTES
    )
    agents = next(f for f in result.files if f.path == AGENTS_PATH)
    assert agents.truncated and agents.size <= CONTEXT_FILE_MAX_BYTES
    assert _section(result.system_prompt, USER_PATH) == "短"
    assert ws.memory_reads == []


async def test_file_of_exactly_64_kib_is_not_cut(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    text = "x" * (CONTEXT_FILE_MAX_BYTES - 3) + "界"
    assert len(text.encode("utf-8")) == CONTEXT_FILE_MAX_BYTES
    ws.put(USER_PATH, text)

    result = await build_agent_input_context(workspace=ws, identity=CTX, base_prompt="base")

    assert _section(result.system_prompt, USER_PATH) == text
    assert "truncated" not in result.system_prompt
    assert [f.truncated for f in result.files] == [False]


async def test_missing_empty_and_symlinked_files_are_skipped(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    ws.put(USER_PATH, "   \n")  # whitespace only
    agents_dir = ws.directory / "agents"
    (agents_dir / "AGENTS.md").unlink()
    target = tmp_path / "outside.md"
    target.write_text("OUTSIDE-SECRET")
    os.symlink(target, agents_dir / "AGENTS.md")

    result = await build_agent_input_context(workspace=ws, identity=CTX, base_prompt="base")
    assert result.system_prompt == "base"
    assert result.files == ()

    (agents_dir / "AGENTS.md").unlink()
    (agents_dir / "USER.md").unlink()
    result = await build_agent_input_context(workspace=ws, identity=CTX, base_prompt="base")
    assert result.system_prompt == "base"
    assert ws.memory_reads == []


async def test_invalid_utf8_file_is_skipped(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    ws.replace_file_sync(AGENTS_PATH, b"\xff\xfe not text")
    ws.put(USER_PATH, "ok")
    result = await build_agent_input_context(workspace=ws, identity=CTX, base_prompt="base")
    assert "not text" not in result.system_prompt
    assert [f.path for f in result.files] == [USER_PATH]


async def test_subagent_identity_is_allowed_and_kept(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    sub = RunIdentity(uid=UID, thread_id="child", run_id="run-2", request_id="r2", worker_id=None)
    result = await build_agent_input_context(workspace=ws, identity=sub, base_prompt="sub")
    assert result.identity.worker_id is None
    assert ws.memory_reads == []


async def test_foreign_workspace_is_refused(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    other = RunIdentity(
        uid="someone-else", thread_id="t", run_id="r", request_id="q", worker_id="w"
    )
    with pytest.raises(ValueError, match="does not belong"):
        await build_agent_input_context(workspace=ws, identity=other, base_prompt="x")


def test_trusted_context_fails_closed(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    top = run_context(ws)
    assert trusted_context(top, require_worker=True) is top
    assert trusted_context(None, require_worker=False) is None
    assert trusted_context({"uid": UID}, require_worker=False) is None
    # An identity alone is no run context: the workspace comes with it or not at all.
    assert trusted_context(CTX, require_worker=False) is None
    sub = run_context(
        ws, RunIdentity(uid=UID, thread_id="t", run_id="r", request_id="q", worker_id=None)
    )
    assert trusted_context(sub, require_worker=False) is sub
    assert trusted_context(sub, require_worker=True) is None
    with pytest.raises(UnauthorizedRun):  # a blank value cannot even be built
        RunIdentity(uid=UID, thread_id="", run_id="r", request_id="q", worker_id="w")
    blank = forged_context(forged_identity(thread_id=""), ws)
    assert trusted_context(blank, require_worker=False) is None
    # Another user's workspace: refused when built, and when forged past construction.
    other = replace(CTX, uid="someone-else")
    with pytest.raises(UnauthorizedRun, match="does not belong"):
        run_context(ws, other)
    assert trusted_context(forged_context(other, ws), require_worker=False) is None
    assert trusted_context(forged_context(CTX, object()), require_worker=False) is None


async def test_the_workspace_is_made_sure_of_only_when_asked(tmp_path: Path) -> None:
    """``ensure_workspace``: a run's assembly makes sure of its user's workspace in the same
    hop off the event loop as the reads; without it nothing is created."""
    ws = SpyWorkspace(tmp_path / "workspaces")
    await build_agent_input_context(workspace=ws, identity=CTX, base_prompt="BASE")
    assert not ws.directory.exists()
    result = await build_agent_input_context(
        workspace=ws, identity=CTX, base_prompt="BASE", ensure_workspace=True
    )
    assert result.system_prompt == "BASE"  # the new files are empty: no section
    assert sorted(p.name for p in (ws.directory / "agents").iterdir()) == [
        "AGENTS.md",
        "MEMORY.md",
        "USER.md",
    ]
