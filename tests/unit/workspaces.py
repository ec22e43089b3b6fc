"""A user's workspace on disk with an old MEMORY.md, for the staging tests."""

from __future__ import annotations

from pathlib import Path

from yuxi.workspace.filesystem import MEMORY_PATH, Workspace

OLD_MEMORY = "旧的 old\n".encode()


def memory_workspace(tmp_path: Path, uid: str) -> Workspace:
    """The workspace of ``uid`` under ``tmp_path``, MEMORY.md holding :data:`OLD_MEMORY`."""
    workspace = Workspace(tmp_path / "workspaces", uid)
    workspace.ensure_user_workspace_sync()
    workspace.replace_file_sync(MEMORY_PATH, OLD_MEMORY)
    return workspace


def temp_files(workspace: Workspace) -> list[str]:
    """Publish temps left next to MEMORY.md."""
    folder = (workspace.directory / MEMORY_PATH).parent
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
