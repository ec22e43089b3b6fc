"""A per-user file lock taken *inside* the PostgreSQL advisory lock around every MEMORY.md write.

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
import fcntl
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path


def _open_and_lock(path: Path) -> int:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _unlock(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@asynccontextmanager
async def memory_file_lock(workspace_root: Path, workspace_dir_name: str) -> AsyncIterator[None]:
    path = workspace_root / ".locks" / f"{workspace_dir_name}.memory.lock"
    acquiring = asyncio.ensure_future(asyncio.to_thread(_open_and_lock, path))
    try:
        fd = await asyncio.shield(acquiring)
    except asyncio.CancelledError:
        # The thread keeps going and may still get the lock: release it as soon as it does.
        acquiring.add_done_callback(
            lambda t: None if t.cancelled() or t.exception() else _unlock(t.result())
        )
        raise
    try:
        yield
    finally:
        await asyncio.to_thread(_unlock, fd)
