"""A publish cut in two (``Workspace.stage_authorized_file_sync`` → ``StagedFile``): the target
keeps its old bytes until ``publish_sync``, ``discard_sync`` leaves no trace, and a staged file
is used exactly once."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from yuxi.errors import SymlinkRefused
from yuxi.workspace.filesystem import MEMORY_PATH, Workspace

from .workspaces import OLD_MEMORY, memory_workspace, temp_files


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return memory_workspace(tmp_path, "u_staged")


def _target(ws: Workspace) -> Path:
    return ws.directory / MEMORY_PATH


_temps = temp_files


def test_the_target_changes_only_when_published(ws: Workspace) -> None:
    new = "新的 new\n".encode()
    staged = ws.stage_authorized_file_sync(MEMORY_PATH, new)
    assert _target(ws).read_bytes() == OLD_MEMORY
    [temp] = _temps(ws)
    assert (_target(ws).parent / temp).read_bytes() == new
    staged.publish_sync()
    assert _target(ws).read_bytes() == new
    assert stat.S_IMODE(_target(ws).stat().st_mode) == 0o600
    assert _temps(ws) == []


def test_a_discarded_stage_leaves_the_target_and_no_temp(ws: Workspace) -> None:
    before = _target(ws).read_bytes()
    ws.stage_authorized_file_sync(MEMORY_PATH, b"discarded\n").discard_sync()
    assert _target(ws).read_bytes() == before
    assert _temps(ws) == []


def test_a_staged_file_is_used_once(ws: Workspace) -> None:
    staged = ws.stage_authorized_file_sync(MEMORY_PATH, b"once\n")
    staged.publish_sync()
    with pytest.raises(RuntimeError, match="already"):
        staged.publish_sync()
    with pytest.raises(RuntimeError, match="already"):
        staged.discard_sync()


def test_staging_refuses_a_symlinked_target_and_creates_nothing(ws: Workspace) -> None:
    target = _target(ws)
    target.unlink()
    os.symlink(ws.directory / "agents" / "USER.md", target)
    with pytest.raises(SymlinkRefused):
        ws.stage_authorized_file_sync(MEMORY_PATH, b"never\n")
    assert _temps(ws) == []
    assert target.is_symlink()


def test_a_failed_rename_removes_the_temp_and_keeps_the_target(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged = ws.stage_authorized_file_sync(MEMORY_PATH, b"never published\n")

    def no_space(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "rename", no_space)
    with pytest.raises(OSError, match="No space"):
        staged.publish_sync()
    monkeypatch.undo()
    assert _target(ws).read_bytes() == OLD_MEMORY
    assert _temps(ws) == []
