"""Directory-fd walking that never follows a symlink, and bounded reads of regular files.

Every function takes the directory file descriptor it works in and resolves exactly one name in
it, so a path is resolved component by component (``openat`` style) and no component can be a
symlink, ``..`` or an absolute path. Callers own the descriptors these functions return.

Only the workspace *root* (the directory that holds every user's workspace, trusted
configuration) is opened by path, following symlinks; everything below it is untrusted.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from yuxi.errors import NotARegularFile, SymlinkRefused, UnsafePath, WorkspaceFileNotFound

DIR_MODE = 0o700
FILE_MODE = 0o600

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO for reading must not block waiting for a writer; it has no effect
# on regular files, and anything that is not a regular file is refused after fstat anyway.
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

_READ_CHUNK = 1 << 20


def close_quietly(fd: int) -> None:
    """Close ``fd`` on an error path, where a second error must not hide the first."""
    with contextlib.suppress(OSError):
        os.close(fd)


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    """``lstat`` of ``name`` in ``dir_fd`` (never follows a symlink); ``None`` if missing."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _raise_for_directory_failure(dir_fd: int, name: str, display: str, exc: OSError) -> NoReturn:
    """Explain why ``name`` could not be opened as a directory; re-raise ``exc`` if unexplained."""
    st = lstat_at(dir_fd, name)
    if st is None:
        raise WorkspaceFileNotFound(f"no such directory: {display}") from exc
    if stat.S_ISLNK(st.st_mode):
        raise SymlinkRefused(f"refusing to follow a symlink: {display}") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(f"not a directory: {display}") from exc
    raise exc


def open_subdir(parent_fd: int, name: str, display: str, *, create: bool) -> int:
    """Open directory ``name`` in ``parent_fd`` without following symlinks.

    With ``create``, a missing directory is created with mode 0700 (a concurrent creator winning
    the race is fine) and the parent is fsynced so the new entry is durable. ``display`` names
    the directory in error messages (workspace-relative, never a server path).
    """
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError as exc:
        if not create:
            raise WorkspaceFileNotFound(f"no such directory: {display}") from exc
    except OSError as exc:
        _raise_for_directory_failure(parent_fd, name, display, exc)
    created = False
    try:
        os.mkdir(name, DIR_MODE, dir_fd=parent_fd)
        created = True
    except FileExistsError:
        pass
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        _raise_for_directory_failure(parent_fd, name, display, exc)
    if created:
        try:
            os.fchmod(fd, DIR_MODE)  # exact mode, whatever the umask
            os.fsync(parent_fd)
        except BaseException:
            close_quietly(fd)
            raise
    return fd


def open_root(root: Path, *, create: bool) -> int:
    """Open the trusted workspace root (creating it 0700 if asked). Missing → not found."""
    if create:
        os.makedirs(root, mode=DIR_MODE, exist_ok=True)
    try:
        return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError as exc:
        raise WorkspaceFileNotFound("the workspace does not exist") from exc


def open_directory_chain(
    root: Path, user_dirname: str, components: Sequence[str], *, create: bool
) -> int:
    """Open ``root/user_dirname/components...`` one component at a time; return the last fd.

    Every fd but the returned one is closed before returning, on success and on failure alike.
    """
    fd = open_root(root, create=create)
    try:
        names = (user_dirname, *components)
        for index, name in enumerate(names):
            display = "/".join(components[:index]) if index else "the workspace directory"
            child = open_subdir(fd, name, display, create=create)
            parent, fd = fd, child
            os.close(parent)
        return fd
    except BaseException:
        close_quietly(fd)
        raise


def open_regular_file(dir_fd: int, name: str, display: str) -> int:
    """Open ``name`` in ``dir_fd`` for reading; refuse symlinks and anything not a regular file."""
    st = lstat_at(dir_fd, name)
    if st is None:
        raise WorkspaceFileNotFound(f"file not found: {display}")
    if stat.S_ISLNK(st.st_mode):
        raise SymlinkRefused(f"refusing to follow a symlink: {display}")
    if not stat.S_ISREG(st.st_mode):
        # Checked before open so that devices and FIFOs are never even opened.
        raise NotARegularFile(f"not a regular file: {display}")
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError as exc:
        raise WorkspaceFileNotFound(f"file not found: {display}") from exc
    except OSError as exc:
        # Swapped for a symlink (ELOOP) or something else since the lstat above.
        now = lstat_at(dir_fd, name)
        if now is not None and stat.S_ISLNK(now.st_mode):
            raise SymlinkRefused(f"refusing to follow a symlink: {display}") from exc
        if now is not None and not stat.S_ISREG(now.st_mode):
            raise NotARegularFile(f"not a regular file: {display}") from exc
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotARegularFile(f"not a regular file: {display}")
    except BaseException:
        close_quietly(fd)
        raise
    return fd


def read_at_most(fd: int, limit: int) -> bytes:
    """Read from ``fd`` until ``limit`` bytes or end of file, whichever comes first."""
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, _READ_CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def create_file_if_missing(dir_fd: int, name: str) -> bool:
    """Create an empty 0600 file ``name`` unless *any* entry of that name exists (even a symlink).

    Returns True when this call created it. Never opens, truncates or follows an existing entry.
    """
    try:
        fd = os.open(name, CREATE_FLAGS, FILE_MODE, dir_fd=dir_fd)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return True
