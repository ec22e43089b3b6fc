"""Removing a user's whole workspace: the directory and its lock file (account deletion).

The caller holds the user's workspace lock (:meth:`Workspace.locked`) and has already made sure
no writer can come back: the user's rows, runs and tokens are gone in the same transaction, and
every writer checks them (the memory gate, the run's lease, the token) before it takes the lock.
So the lock file can go too; it is the last name on disk that carries part of the uid.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat

from yuxi.workspace.filesystem import Workspace, workspace_dirname
from yuxi.workspace.locking import _lock_path

__all__ = ["remove_workspace_sync"]


def _count_files(top: str) -> int:
    count = 0
    for _, _, files in os.walk(top, followlinks=False):
        count += len(files)
    return count


def remove_workspace_sync(workspace: Workspace) -> int:
    """Delete the workspace directory (never following a symlink: ``shutil.rmtree`` works on
    descriptors on Linux) and its lock file; the number of files removed."""
    directory = workspace.directory
    removed = 0
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        removed = _count_files(str(directory))
        shutil.rmtree(directory)
    elif st is not None:  # a link or a file where the directory should be: remove the name only
        os.unlink(directory)
        removed = 1
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_lock_path(workspace.root, workspace_dirname(workspace.uid)))
    return removed
