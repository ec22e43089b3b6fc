"""The per-user workspace lock: every read-modify-write of a user's files holds it.

MEMORY.md writers take it *inside* the PostgreSQL advisory lock; the file API and the agent's
generic file tools take it alone around their check-then-write (no database lock inside, so it
cannot deadlock with them).

The advisory lock is the authority that serializes writers across workers. It lives as long as
the database session: if that connection dies mid-write, PostgreSQL releases the lock while this
process may still be about to publish. The ``flock`` closes that gap for writers that share the
data directory — it is held by the process doing the publish, not by a remote session — so two
writers can never interleave a read-modify-publish of the same file even then.

Lock files live in ``<workspace root>/.locks/``, a directory users cannot reach through the
workspace API (their paths are relative to their own workspace directory).

Guarantees: mutual exclusion between processes on one host (and hosts sharing a filesystem with
working ``flock``). Not guaranteed: NFS without lock support.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import fcntl
import functools
import os
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

from yuxi.workspace._storage import refused_writes

T = TypeVar("T")

#: Back-off between attempts on a lock another process holds (seconds, doubling up to the cap).
RETRY_FIRST = 0.001
RETRY_MAX = 0.05

#: Per event loop, per lock file: the asyncio lock that queues this process's own waiters.
_waiters: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, weakref.WeakValueDictionary[Path, asyncio.Lock]
] = weakref.WeakKeyDictionary()


def _open(path: Path) -> int:
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    # Only writers lock: on a full or read-only data dir they are refused here already.
    with refused_writes("the workspace lock"):
        try:
            return os.open(path, flags, 0o600)
        except FileNotFoundError:  # the first lock under this root: create .locks/
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            return os.open(path, flags, 0o600)


def try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@functools.lru_cache(maxsize=4096)  # pathlib joins are slow next to a lookup; every write asks
def _lock_path(workspace_root: Path, workspace_dir_name: str) -> Path:
    return workspace_root / ".locks" / f"{workspace_dir_name}.lock"


def _process_lock(path: Path) -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    locks = _waiters.get(loop)
    if locks is None:
        locks = _waiters[loop] = weakref.WeakValueDictionary()
    lock = locks.get(path)
    if lock is None:
        lock = locks[path] = asyncio.Lock()
    return lock


@asynccontextmanager
async def workspace_lock(workspace_root: Path, workspace_dir_name: str) -> AsyncIterator[None]:
    """Hold the user's lock file exclusively for the block (see :func:`workspace_lock_then`)."""
    async with workspace_lock_then(workspace_root, workspace_dir_name, _nothing):
        yield


def _nothing() -> None:
    return None


def _open_lock_then(path: Path, first: Callable[[], T]) -> tuple[int, bool, T | None]:
    """In a worker thread: open the lock file, try the ``flock`` and, if it was free, run
    ``first`` while holding it. On an error the descriptor is closed (the lock goes with it)."""
    fd = _open(path)
    try:
        if not try_lock(fd):
            return fd, False, None
        return fd, True, first()
    except BaseException:
        os.close(fd)
        raise


def _close_abandoned(job: asyncio.Future[tuple[int, bool, Any]]) -> None:
    """The waiter was cancelled while the thread opened (and maybe locked): close its fd."""
    if not job.cancelled() and job.exception() is None:
        os.close(job.result()[0])


@asynccontextmanager
async def workspace_lock_then(
    workspace_root: Path, workspace_dir_name: str, first: Callable[[], T]
) -> AsyncIterator[T]:
    """Hold the user's lock file exclusively for the block; yield what ``first()`` returned,
    run in a worker thread once the lock is held (e.g. the read of a read-modify-write).

    One hop off the event loop when the lock is free: opening the lock file, taking the
    ``flock`` and ``first()`` run in the same worker thread. Waiting never occupies a thread:
    this process's waiters queue on an :class:`asyncio.Lock` (one per lock file), and the one at
    the front polls a non-blocking ``flock`` with a short back-off while another process holds
    it (``first()`` then runs in a second hop). (A blocking ``flock`` in a worker thread per
    waiter starved the default thread pool: eight racing editors of one file deadlocked the
    server, the lock holder waiting for a thread to write with.) Cancelling a waiter is safe at
    any point; the file descriptor is always closed.
    """
    path = _lock_path(workspace_root, workspace_dir_name)
    async with _process_lock(path):
        # Shielded: a cancellation must not abandon a thread that may already hold the flock
        # with nobody left to close its descriptor.
        # Handed straight to the thread pool (what asyncio.to_thread does, without a task
        # around it to schedule first: one loop iteration less each way on the write path).
        job = asyncio.get_running_loop().run_in_executor(
            None, functools.partial(contextvars.copy_context().run, _open_lock_then, path, first)
        )
        try:
            fd, held, value = await asyncio.shield(job)
        except asyncio.CancelledError:
            job.add_done_callback(_close_abandoned)
            raise
        try:
            if not held:
                delay = RETRY_FIRST
                while not try_lock(fd):
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, RETRY_MAX)
                value = await asyncio.to_thread(first)
            try:
                yield cast(T, value)
            finally:
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
