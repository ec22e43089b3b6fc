"""A full or read-only data dir is a clear error, decided once (design.md §5.6a):
``ENOSPC``/``EDQUOT`` → ``storage_full``, ``EROFS``/``EACCES`` → ``storage_read_only``, both
HTTP 507 and an error tool result; the refused write changed nothing and left no temp. Every
other ``OSError`` stays what it was.

The end-to-end proof (HTTP, agent runs, a real small filesystem) is
``tests/reliability/test_r7_storage.py``."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from langchain.tools import ToolRuntime
from langchain_core.tools import StructuredTool

from tests.support.agent_fakes import FakeMemory, SpyWorkspace
from tests.support.run_contexts import memory_of, run_context
from yuxi.agents.tools import make_workspace_tools
from yuxi.agents.tools.tool_result import tool_outcome
from yuxi.api.errors import status_for
from yuxi.errors import StorageFull, StorageReadOnly, YuxiError
from yuxi.workspace import is_temp_name
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace

OLD = "旧的记忆：乌龙茶\n".encode()
NEW = "新的记忆：普洱茶\n".encode()

REFUSED = [
    (errno.ENOSPC, StorageFull, "storage_full"),
    (errno.EDQUOT, StorageFull, "storage_full"),
    (errno.EROFS, StorageReadOnly, "storage_read_only"),
    (errno.EACCES, StorageReadOnly, "storage_read_only"),
]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "workspaces", "alice")
    workspace.ensure_user_workspace_sync()
    workspace.replace_file_sync(MEMORY_PATH, OLD)
    return workspace


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _temps(root: Path) -> list[Path]:
    return [p for p in root.rglob(".*") if is_temp_name(p.name)]


def _failing_temp_open(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    """The temp file's creation fails with ``code`` (where a read-only mount refuses)."""
    real_open = os.open

    def refuse(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if isinstance(path, str) and is_temp_name(path):
            raise OSError(code, os.strerror(code))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)


@pytest.mark.parametrize(("code", "error", "name"), REFUSED)
def test_a_refused_write_is_its_clear_error_and_changes_nothing(
    ws: Workspace,
    monkeypatch: pytest.MonkeyPatch,
    code: int,
    error: type[YuxiError],
    name: str,
) -> None:
    memory = ws.directory / MEMORY_PATH
    before = _sha(memory)
    _failing_temp_open(monkeypatch, code)
    with pytest.raises(error) as refused:
        ws.replace_file_sync(MEMORY_PATH, NEW)
    assert refused.value.code == name
    assert isinstance(refused.value.__cause__, OSError)
    assert refused.value.__cause__.errno == code
    assert "nothing was changed" in refused.value.message
    assert _sha(memory) == before
    assert _temps(ws.root) == []
    monkeypatch.undo()
    ws.replace_file_sync(MEMORY_PATH, NEW)  # the fault gone, the same write succeeds
    assert memory.read_bytes() == NEW


def test_a_full_disk_mid_write_removes_the_partial_temp(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = ws.directory / MEMORY_PATH
    real_write = os.write
    calls = 0

    def write_some_then_full(fd: int, data: Any) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            return real_write(fd, bytes(data[:4]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", write_some_then_full)
    with pytest.raises(StorageFull):
        ws.replace_file_sync("notes/新.md", NEW)
    assert memory.read_bytes() == OLD
    assert not (ws.directory / "notes" / "新.md").exists()
    assert _temps(ws.root) == []


def test_other_os_errors_stay_what_they_are(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    _failing_temp_open(monkeypatch, errno.EIO)
    with pytest.raises(OSError) as failed:
        ws.replace_file_sync(MEMORY_PATH, NEW)
    assert failed.value.errno == errno.EIO
    assert not isinstance(failed.value, YuxiError)


def test_a_delete_on_a_read_only_dir_is_refused_and_the_file_stays(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_only(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(os, "unlink", read_only)
    with pytest.raises(StorageReadOnly):
        ws.delete_file_sync(MEMORY_PATH)
    assert (ws.directory / MEMORY_PATH).read_bytes() == OLD


def test_a_new_workspace_on_a_full_disk_is_storage_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "mkdir", full)
    with pytest.raises(StorageFull):
        Workspace(tmp_path / "workspaces", "bob").ensure_user_workspace_sync()


async def test_the_lock_of_a_read_only_dir_is_refused_before_anything_is_read(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def read_only(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith(".lock"):
            raise OSError(errno.EROFS, "Read-only file system")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(StorageReadOnly):
        async with ws.locked():
            pytest.fail("the lock was taken on a read-only dir")


@pytest.mark.parametrize("error", [StorageFull, StorageReadOnly])
def test_http_507(error: type[YuxiError]) -> None:
    assert status_for(error("x")) == 507


@pytest.mark.parametrize(
    ("error", "name"), [(StorageFull, "storage_full"), (StorageReadOnly, "storage_read_only")]
)
async def test_the_model_is_told_the_code(error: type[YuxiError], name: str) -> None:
    async def write() -> Any:
        raise error("the disk is full; nothing was changed")

    payload, is_error = await tool_outcome(write)
    assert is_error
    assert payload == {
        "status": "error",
        "code": name,
        "error": "the disk is full; nothing was changed",
    }


@pytest.mark.parametrize(
    ("code", "name"), [(errno.ENOSPC, "storage_full"), (errno.EROFS, "storage_read_only")]
)
async def test_the_workspace_tools_tell_the_model_and_change_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, name: str
) -> None:
    """``write_workspace_file`` and ``edit_workspace_file`` (the offline model only ever calls
    the first; R7 drives it through a run) answer the code; the file and the directory stay."""
    ws = SpyWorkspace(tmp_path / "workspaces")
    ws.ensure_user_workspace_sync()
    ws.put("notes/茶.md", "乌龙茶\n")
    memory = FakeMemory(ws)
    tools = {
        t.name: t for t in make_workspace_tools(memory=memory, files=memory, allow_memory_file=True)
    }
    before = _sha(ws.directory / "notes" / "茶.md")
    _failing_temp_open(monkeypatch, code)
    calls = {
        "write_workspace_file": {"path": "notes/茶.md", "content": "普洱茶\n"},
        "edit_workspace_file": {"path": "notes/茶.md", "old": "乌龙", "new": "普洱"},
    }
    for tool_name, args in calls.items():
        tool = tools[tool_name]
        assert isinstance(tool, StructuredTool) and tool.coroutine is not None
        runtime: ToolRuntime[Any, Any] = ToolRuntime(
            state={"messages": []},
            context=run_context(ws, memory=memory_of("")),
            config={},
            stream_writer=lambda _chunk: None,
            tool_call_id="call-1",
            store=None,
        )
        message = await tool.coroutine(**args, runtime=runtime)
        assert message.status == "error"
        assert json.loads(message.content)["code"] == name, message.content
    assert _sha(ws.directory / "notes" / "茶.md") == before
    assert _temps(ws.root) == []
