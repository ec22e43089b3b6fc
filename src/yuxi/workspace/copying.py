"""Whole-workspace copies for ``yuxi backup`` and ``yuxi restore``: every regular file of a
user's workspace opened for streaming, and a file written into a new workspace.

The same rules as :mod:`yuxi.workspace.filesystem`: every path is validated, every component is
opened with ``O_NOFOLLOW`` from its parent's descriptor, only regular files are read; a restore
never overwrites anything (``O_EXCL``). Callers that need a consistent copy hold the user's
workspace lock (:meth:`~yuxi.workspace.filesystem.Workspace.locked`) around the copy.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from yuxi.workspace._fd import (
    CREATE_FLAGS,
    FILE_MODE,
    close_quietly,
    open_directory_chain,
    open_regular_file,
)
from yuxi.workspace._paths import split_relative_path, workspace_dirname

__all__ = ["open_workspace_file", "write_new_workspace_file"]

_CHUNK = 1 << 20


@contextmanager
def open_workspace_file(root: Path, uid: str, path: str) -> Iterator[IO[bytes]]:
    """``path`` of ``uid``'s workspace opened for reading (a regular file, no symlink on the
    way); raises the workspace errors (``WorkspaceFileNotFound``...) otherwise."""
    components = split_relative_path(path)
    dir_fd = open_directory_chain(root, workspace_dirname(uid), components[:-1], create=False)
    try:
        fd = open_regular_file(dir_fd, components[-1], path)
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as handle:
        yield handle


def write_new_workspace_file(root: Path, uid: str, path: str, source: IO[bytes], size: int) -> None:
    """Create ``path`` in ``uid``'s workspace under ``root`` (directories 0700, file 0600) with
    exactly ``size`` bytes from ``source``. An existing entry of that name is an error
    (``FileExistsError``): a restore only ever fills an empty workspace."""
    components = split_relative_path(path)
    dir_fd = open_directory_chain(root, workspace_dirname(uid), components[:-1], create=True)
    try:
        fd = os.open(components[-1], CREATE_FLAGS, FILE_MODE, dir_fd=dir_fd)
    finally:
        close_quietly(dir_fd)
    with os.fdopen(fd, "wb") as out:
        remaining = size
        while remaining > 0:
            chunk = source.read(min(_CHUNK, remaining))
            if not chunk:
                raise EOFError(f"{path}: the source ended {remaining} bytes early")
            out.write(chunk)
            remaining -= len(chunk)
