"""Atomic publish of a file inside an already-opened, symlink-free directory (design.md §5.6).

Every call into the OS goes through the ``os`` module attribute (``os.open``, ``os.write``,
``os.fsync``, ``os.rename``, ``os.unlink``) so tests can inject failures at each step.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import time

from yuxi.errors import NotARegularFile, SymlinkRefused
from yuxi.workspace._fd import CREATE_FLAGS, FILE_MODE, close_quietly, lstat_at
from yuxi.workspace._paths import is_temp_name, make_temp_name

_log = logging.getLogger(__name__)

# rename() onto a directory fails with one of these; the target stopped being a regular file.
_TARGET_IS_DIR_ERRNOS = frozenset({errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST})


def refuse_unsafe_target(dir_fd: int, name: str, display: str) -> None:
    """Refuse an existing target that is a symlink or not a regular file (missing is fine)."""
    st = lstat_at(dir_fd, name)
    if st is None:
        return
    if stat.S_ISLNK(st.st_mode):
        raise SymlinkRefused(f"refusing to replace a symlink: {display}")
    if not stat.S_ISREG(st.st_mode):
        raise NotARegularFile(
            f"refusing to replace something that is not a regular file: {display}"
        )


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data``, looping on partial writes."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.EIO, "write made no progress")
        view = view[written:]


def discard_temp(dir_fd: int, temp_name: str) -> None:
    """Remove our temp file after a failure. Never raises: the original error matters more."""
    try:
        os.unlink(temp_name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    except OSError:
        _log.warning(
            "could not remove publish temp file %r; cleanup_stale_temp_files() will",
            temp_name,
            exc_info=True,
        )


def stage_file(dir_fd: int, name: str, data: bytes, display: str) -> str:
    """The first half of a publish: refuse an unsafe target, then create, write and fsync the
    temp file next to it. Returns the temp's name; the target is untouched. On any failure the
    temp is removed before the error is re-raised."""
    refuse_unsafe_target(dir_fd, name, display)
    temp_name = make_temp_name(name)
    # If this open fails nothing was created, so there is nothing to clean up; in particular an
    # EEXIST here is someone else's file and must not be unlinked.
    fd = os.open(temp_name, CREATE_FLAGS, FILE_MODE, dir_fd=dir_fd)
    try:
        try:
            os.fchmod(fd, FILE_MODE)  # exact mode, whatever the umask
            write_all(fd, data)
            os.fsync(fd)
        except BaseException:
            close_quietly(fd)
            raise
        os.close(fd)
    except BaseException:
        discard_temp(dir_fd, temp_name)
        raise
    return temp_name


def commit_staged(dir_fd: int, temp_name: str, name: str, display: str) -> None:
    """The second half: ``rename`` the staged temp onto the target, then fsync the directory.
    If the rename fails the temp is removed and the target is untouched."""
    try:
        # rename() never follows a symlink at the destination: if the target was swapped for a
        # symlink after the check, the link itself is replaced, not its target.
        os.rename(temp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException as exc:
        discard_temp(dir_fd, temp_name)
        if isinstance(exc, OSError) and exc.errno in _TARGET_IS_DIR_ERRNOS:
            raise NotARegularFile(
                f"refusing to replace something that is not a regular file: {display}"
            ) from exc
        raise
    # Published. A failure from here on is still raised: readers already see the new bytes, but
    # the rename may not survive a crash.
    os.fsync(dir_fd)


def publish_file(dir_fd: int, name: str, data: bytes, display: str) -> None:
    """Atomically replace ``name`` in ``dir_fd`` with ``data``. See ``replace_file``."""
    commit_staged(dir_fd, stage_file(dir_fd, name, data, display), name, display)


def remove_stale_temps(dir_fd: int, older_than_seconds: float) -> int:
    """Unlink regular files in ``dir_fd`` named like publish temps and at least this old."""
    now = time.time()
    removed = 0
    for entry_name in os.listdir(dir_fd):
        if not is_temp_name(entry_name):
            continue
        st = lstat_at(dir_fd, entry_name)
        if st is None or not stat.S_ISREG(st.st_mode):
            continue  # vanished, or a symlink/directory/...: never followed, never removed
        if now - st.st_mtime < older_than_seconds:
            continue
        try:
            os.unlink(entry_name, dir_fd=dir_fd)
        except FileNotFoundError:
            continue
        removed += 1
    if removed:
        os.fsync(dir_fd)
    return removed
