"""One user's workspace on disk: safe paths, bounded reads, atomic publish.

Threat model: everything inside a user's workspace directory — including that directory itself —
may have been shaped by someone hostile (a generic file tool, a second process, a user with shell
access to their own data). The workspace *root* (``data_dir / "workspaces"``) is trusted
configuration. Therefore:

* every relative path is validated (:func:`split_relative_path` rules) before any I/O;
* every component below the root is resolved with ``openat(…, O_NOFOLLOW)`` from the previous
  directory's fd, so no symlink is ever followed and ``..`` can never escape;
* only regular files are read, written or deleted;
* every write is an atomic publish (:meth:`Workspace.replace_file`).

The public API is ``async`` and runs the blocking work in a worker thread (``asyncio.to_thread``);
each method has a ``*_sync`` twin for synchronous callers (CLI, other processes, tests). Cancelling
an awaiting task does not interrupt the thread: an operation that started runs to completion.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

from yuxi.errors import (
    FileTooLarge,
    InvalidArgument,
    NotARegularFile,
    SymlinkRefused,
    UnsafePath,
    WorkspaceError,
    WorkspaceFileNotFound,
)
from yuxi.workspace._etag import etag_for, if_match_allows
from yuxi.workspace._fd import (
    close_quietly,
    create_file_if_missing,
    lstat_at,
    open_directory_chain,
    open_regular_file,
    open_subdir,
    read_at_most,
)
from yuxi.workspace._paths import is_temp_name, split_relative_path, workspace_dirname
from yuxi.workspace._storage import refused_writes
from yuxi.workspace.locking import T, workspace_lock, workspace_lock_then
from yuxi.workspace.publishing import publish_file, remove_stale_temps

__all__ = [
    "AGENTS_PATH",
    "MEMORY_PATH",
    "USER_PATH",
    "FileEntry",
    "Workspace",
    "etag_for",
    "if_match_allows",
    "split_relative_path",
    "workspace_dirname",
]

MEMORY_PATH = "agents/MEMORY.md"
AGENTS_PATH = "agents/AGENTS.md"
USER_PATH = "agents/USER.md"
_INITIAL_FILES = (AGENTS_PATH, USER_PATH, MEMORY_PATH)


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One listed or stat'ed entry. ``path`` is workspace-relative POSIX; ``size`` is 0 for dirs."""

    path: str
    size: int
    is_dir: bool
    mtime: float


def _check_max_bytes(max_bytes: object) -> int:
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise InvalidArgument(f"max_bytes must be a non-negative int, got {max_bytes!r}")
    return max_bytes


def _is_listable_name(name: str) -> bool:
    """Names the API could address again: valid component, valid Unicode, not a publish temp."""
    try:
        split_relative_path(name)
    except UnsafePath:
        return False
    return True


def _entry(path: str, st: os.stat_result) -> FileEntry:
    is_dir = stat.S_ISDIR(st.st_mode)
    return FileEntry(path=path, size=0 if is_dir else st.st_size, is_dir=is_dir, mtime=st.st_mtime)


class Workspace:
    """The workspace of user ``uid`` under the trusted root ``root`` (``data_dir/"workspaces"``)."""

    def __init__(self, root: Path, uid: str) -> None:
        self._dirname = workspace_dirname(uid)  # validates uid
        self._root = Path(root)
        self._uid = uid

    def __repr__(self) -> str:
        return f"Workspace(root={str(self._root)!r}, uid={self._uid!r})"

    @property
    def uid(self) -> str:
        return self._uid

    @property
    def root(self) -> Path:
        return self._root

    @property
    def directory(self) -> Path:
        """This user's workspace directory (for display/ops only: never open paths under it)."""
        return self._root / self._dirname

    def locked(self) -> AbstractAsyncContextManager[None]:
        """Hold this user's workspace lock (:mod:`yuxi.workspace.locking`) for a read-modify-write.

        Publishing is atomic without it; what it adds is that no other writer's check-then-write
        of this user's files (in any process on this host) interleaves with the caller's.
        """
        return workspace_lock(self._root, self._dirname)

    def locked_then(self, first: Callable[[], T]) -> AbstractAsyncContextManager[T]:
        """:meth:`locked`, yielding ``first()`` run in the worker thread that took the lock."""
        return workspace_lock_then(self._root, self._dirname, first)

    # --- helpers --------------------------------------------------------------------------

    def _open_dir(self, components: Sequence[str], *, create: bool) -> int:
        return open_directory_chain(self._root, self._dirname, components, create=create)

    # --- initialisation -------------------------------------------------------------------

    def ensure_user_workspace_sync(self) -> None:
        """Create the root, the workspace dir, ``agents/`` (0700) and the three files (0600).

        Only what is missing is created; an existing entry is never opened, truncated or
        overwritten (even a symlink is left alone here — reads and writes refuse it later).
        """
        with refused_writes("the workspace"):
            dir_fd = self._open_dir(("agents",), create=True)
            try:
                created = False
                for path in _INITIAL_FILES:
                    created |= create_file_if_missing(dir_fd, path.rsplit("/", 1)[1])
                if created:
                    os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    async def ensure_user_workspace(self) -> None:
        await asyncio.to_thread(self.ensure_user_workspace_sync)

    # --- reads ----------------------------------------------------------------------------

    def _read_bounded(self, path: str, limit: int) -> bytes:
        components = split_relative_path(path)
        try:
            dir_fd = self._open_dir(components[:-1], create=False)
        except WorkspaceFileNotFound as exc:
            raise WorkspaceFileNotFound(f"file not found: {path}") from exc
        try:
            fd = open_regular_file(dir_fd, components[-1], path)
        finally:
            os.close(dir_fd)
        try:
            return read_at_most(fd, limit)
        finally:
            os.close(fd)

    def read_file_prefix_sync(self, path: str, max_bytes: int) -> tuple[bytes, bool]:
        """First ``max_bytes`` bytes of a regular file, and whether the file had more."""
        limit = _check_max_bytes(max_bytes)
        data = self._read_bounded(path, limit + 1)
        if len(data) > limit:
            return data[:limit], True
        return data, False

    async def read_file_prefix(self, path: str, max_bytes: int) -> tuple[bytes, bool]:
        return await asyncio.to_thread(self.read_file_prefix_sync, path, max_bytes)

    def read_file_sync(self, path: str, max_bytes: int) -> bytes:
        """The whole regular file; :class:`FileTooLarge` (nothing returned) over ``max_bytes``."""
        limit = _check_max_bytes(max_bytes)
        data = self._read_bounded(path, limit + 1)
        if len(data) > limit:
            raise FileTooLarge(f"{path} is larger than {limit} bytes")
        return data

    async def read_file(self, path: str, max_bytes: int) -> bytes:
        return await asyncio.to_thread(self.read_file_sync, path, max_bytes)

    # --- atomic publish ---------------------------------------------------------------------

    def replace_file_sync(self, path: str, data: bytes) -> None:
        """Atomically replace (or create) the regular file ``path`` with exactly ``data``.

        Steps (design.md §5.6 "Publish"): open every directory on the path with
        ``O_DIRECTORY|O_NOFOLLOW`` from its parent's fd, creating missing ones with mode 0700;
        refuse a target that is a symlink or not a regular file; create
        ``.<name>.<32 random hex>.tmp`` in the same directory with
        ``O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC`` and mode 0600; write every byte; fsync
        it; ``rename`` it onto the target; fsync the directory.

        Guarantees:

        * a reader sees either the complete old bytes or the complete new bytes, never a mix or
          a partial file (rename within one directory is atomic);
        * no symlink is followed anywhere — not on the directory path, not at the target (a
          target swapped for a symlink after the check is itself replaced, its referent never
          written), not at the temp name (``O_EXCL|O_NOFOLLOW``);
        * the published file has mode exactly 0600 and is a new inode (hard links to the old
          file keep the old bytes);
        * when any step before the rename fails, the target is untouched and the temp file is
          removed before the error is re-raised;
        * when fsync of the directory *after* a successful rename fails, the error is raised even
          though readers already see the new bytes: the caller learns that durability across a
          crash is not assured.

        Not guaranteed:

        * durability across power loss if the storage stack acknowledges fsync without
          persisting (some disks, some network or FUSE filesystems);
        * cleanup after the process is killed (SIGKILL, OOM, power cut) between temp creation
          and rename or cleanup: a ``.<name>.<hex>.tmp`` file may remain — see
          :meth:`cleanup_stale_temp_files`;
        * mutual exclusion: two concurrent publishers each publish atomically, the last rename
          wins. Read-modify-write callers must hold the per-uid lock (design.md §5.3).

        Raises :class:`UnsafePath`, :class:`SymlinkRefused`, :class:`NotARegularFile`,
        :class:`StorageFull` (``ENOSPC``, ``EDQUOT``), :class:`StorageReadOnly` (``EROFS``,
        ``EACCES``) — each after the temp is gone, the target untouched — or the
        :class:`OSError` of the step that failed (``EIO``, …).
        """
        if not isinstance(data, bytes):
            raise InvalidArgument(f"data must be bytes, not {type(data).__name__}")
        components = split_relative_path(path)
        with refused_writes(path):
            dir_fd = self._open_dir(components[:-1], create=True)
            try:
                publish_file(dir_fd, components[-1], data, path)
            finally:
                os.close(dir_fd)

    async def replace_file(self, path: str, data: bytes) -> None:
        """Async :meth:`replace_file_sync` (see there for the exact guarantees)."""
        await asyncio.to_thread(self.replace_file_sync, path, data)

    async def write_file(self, path: str, data: bytes) -> None:
        """Generic file write: the same atomic publish as :meth:`replace_file`."""
        await asyncio.to_thread(self.replace_file_sync, path, data)

    def cleanup_stale_temp_files_sync(
        self, path_dir: str = "agents", older_than_seconds: float = 0
    ) -> int:
        """Remove leftover ``.<name>.<hex>.tmp`` regular files in ``path_dir``; return the count.

        Symlinks and non-regular entries with a temp-like name are neither followed nor removed.
        A missing directory counts as clean (0). With the default age 0 this also removes the
        temp of a publish in flight (which then fails cleanly, target untouched): call it under
        the per-uid lock, or pass an age comfortably above the longest write.
        """
        if isinstance(older_than_seconds, bool) or not isinstance(older_than_seconds, int | float):
            raise InvalidArgument("older_than_seconds must be a number")
        components = split_relative_path(path_dir, allow_empty=True)
        try:
            dir_fd = self._open_dir(components, create=False)
        except WorkspaceFileNotFound:
            return 0
        try:
            return remove_stale_temps(dir_fd, float(older_than_seconds))
        finally:
            os.close(dir_fd)

    async def cleanup_stale_temp_files(
        self, path_dir: str = "agents", older_than_seconds: float = 0
    ) -> int:
        return await asyncio.to_thread(
            self.cleanup_stale_temp_files_sync, path_dir, older_than_seconds
        )

    # --- delete / stat / list ---------------------------------------------------------------

    def delete_file_sync(self, path: str) -> None:
        """Unlink the regular file ``path`` (a symlink is refused, not removed or followed)."""
        components = split_relative_path(path)
        try:
            dir_fd = self._open_dir(components[:-1], create=False)
        except WorkspaceFileNotFound as exc:
            raise WorkspaceFileNotFound(f"file not found: {path}") from exc
        try:
            st = lstat_at(dir_fd, components[-1])
            if st is None:
                raise WorkspaceFileNotFound(f"file not found: {path}")
            if stat.S_ISLNK(st.st_mode):
                raise SymlinkRefused(f"refusing to delete through a symlink: {path}")
            if not stat.S_ISREG(st.st_mode):
                raise NotARegularFile(f"not a regular file: {path}")
            try:
                with refused_writes(path):
                    os.unlink(components[-1], dir_fd=dir_fd)
            except FileNotFoundError as exc:
                raise WorkspaceFileNotFound(f"file not found: {path}") from exc
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    async def delete_file(self, path: str) -> None:
        await asyncio.to_thread(self.delete_file_sync, path)

    def stat_file_sync(self, path: str) -> FileEntry | None:
        """Entry for ``path`` (file or directory), ``None`` if missing; symlinks are refused."""
        components = split_relative_path(path)
        try:
            dir_fd = self._open_dir(components[:-1], create=False)
        except WorkspaceFileNotFound:
            return None
        try:
            st = lstat_at(dir_fd, components[-1])
        finally:
            os.close(dir_fd)
        if st is None:
            return None
        if stat.S_ISLNK(st.st_mode):
            raise SymlinkRefused(f"refusing to follow a symlink: {path}")
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            raise NotARegularFile(f"not a regular file: {path}")
        return _entry(path, st)

    async def stat_file(self, path: str) -> FileEntry | None:
        return await asyncio.to_thread(self.stat_file_sync, path)

    def list_files_sync(self, path: str = "", *, recursive: bool = False) -> list[FileEntry]:
        """Regular files and directories in ``path`` ("" = workspace), sorted by path.

        Symlinks, FIFOs, sockets, devices, publish temp files and names the API could not
        address (backslash, undecodable bytes) are skipped; symlinks are never followed. With
        ``recursive`` subdirectories are descended, each opened with ``O_NOFOLLOW``.
        """
        components = split_relative_path(path, allow_empty=True)
        try:
            top_fd = self._open_dir(components, create=False)
        except WorkspaceFileNotFound:
            if not components:
                return []
            raise
        entries: list[FileEntry] = []
        pending: list[tuple[int, tuple[str, ...]]] = [(top_fd, components)]
        try:
            while pending:
                dir_fd, prefix = pending.pop()
                try:
                    for name in os.listdir(dir_fd):
                        if is_temp_name(name) or not _is_listable_name(name):
                            continue
                        st = lstat_at(dir_fd, name)
                        if st is None:
                            continue
                        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                            continue
                        child = (*prefix, name)
                        entries.append(_entry("/".join(child), st))
                        if recursive and stat.S_ISDIR(st.st_mode):
                            try:
                                sub_fd = open_subdir(dir_fd, name, "/".join(child), create=False)
                            except WorkspaceError:
                                continue  # swapped for a symlink or removed meanwhile
                            pending.append((sub_fd, child))
                finally:
                    os.close(dir_fd)
        finally:
            for dir_fd, _ in pending:
                close_quietly(dir_fd)
        entries.sort(key=lambda entry: entry.path)
        return entries

    async def list_files(self, path: str = "", *, recursive: bool = False) -> list[FileEntry]:
        return await asyncio.to_thread(self.list_files_sync, path, recursive=recursive)
