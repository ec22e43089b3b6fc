"""The per-user workspace lock (yuxi.workspace.locking): the flock and the caller's first step in
one worker thread, mutual exclusion across descriptors, and no lock left behind by a cancel."""

from __future__ import annotations

import asyncio
import fcntl
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.locks import FlockRefusals
from tests.support.waiting import until
from yuxi.workspace import locking, workspace_lock, workspace_lock_then


def _lock_path(root: Path) -> Path:
    return root / ".locks" / "ws.lock"


def _held_elsewhere(root: Path) -> bool:
    """Whether another descriptor holds the lock file right now."""
    fd = os.open(_lock_path(root), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


async def test_first_runs_under_the_flock_in_the_thread_that_took_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hops = 0
    loop = asyncio.get_running_loop()
    original = loop.run_in_executor

    def counted(executor: Any, func: Any, /, *args: Any) -> Any:
        nonlocal hops
        hops += 1  # every thread-pool job (asyncio.to_thread makes one too)
        return original(executor, func, *args)

    monkeypatch.setattr(loop, "run_in_executor", counted)
    seen: dict[str, Any] = {}

    def first() -> str:
        seen["thread"] = threading.get_ident()
        seen["held"] = _held_elsewhere(tmp_path)
        return "read"

    async with workspace_lock_then(tmp_path, "ws", first) as value:
        assert value == "read"
        assert _held_elsewhere(tmp_path)
    assert seen == {"thread": seen["thread"], "held": True}
    assert seen["thread"] != threading.get_ident()
    assert hops == 1  # open + flock + first() in one hop
    assert not _held_elsewhere(tmp_path)


async def test_a_lock_held_by_another_descriptor_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with workspace_lock(tmp_path, "ws"):
        pass  # creates the lock file
    other = os.open(_lock_path(tmp_path), os.O_RDWR)
    fcntl.flock(other, fcntl.LOCK_EX)
    ran = asyncio.Event()
    refusals = FlockRefusals(monkeypatch)

    async def writer() -> None:
        async with workspace_lock_then(tmp_path, "ws", lambda: "second hop") as value:
            assert value == "second hop"
            ran.set()

    task = asyncio.ensure_future(writer())
    # Refused in the worker thread, then again by the waiting loop: the writer tried and waits.
    await until("the writer to find the flock taken twice", lambda: refusals.count >= 2, within=5)
    assert not ran.is_set(), "entered while another descriptor held the flock"
    fcntl.flock(other, fcntl.LOCK_UN)
    os.close(other)
    await asyncio.wait_for(task, 5)
    assert ran.is_set()


async def test_an_error_in_first_releases_the_lock(tmp_path: Path) -> None:
    def first() -> None:
        raise OSError("read failed")

    with pytest.raises(OSError, match="read failed"):
        async with workspace_lock_then(tmp_path, "ws", first):
            pytest.fail("the block must not run")
    assert not _held_elsewhere(tmp_path)


async def test_a_waiter_cancelled_while_its_thread_holds_the_flock_leaves_no_lock(
    tmp_path: Path,
) -> None:
    """The thread goes on after the cancel (threads cannot be interrupted) and may take the
    flock; its descriptor must still be closed, or the user's memory is locked forever."""
    in_first, go_on = threading.Event(), threading.Event()

    def first() -> None:
        in_first.set()
        go_on.wait(5)

    async def waiter() -> None:
        async with workspace_lock_then(tmp_path, "ws", first):
            pytest.fail("a cancelled waiter must not enter")

    task = asyncio.ensure_future(waiter())
    await asyncio.to_thread(in_first.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _held_elsewhere(tmp_path)  # the thread still holds it
    go_on.set()
    async with asyncio.timeout(5):
        async with workspace_lock(tmp_path, "ws"):
            pass  # acquired: the abandoned descriptor was closed


def test_the_retry_back_off_is_bounded() -> None:
    assert 0 < locking.RETRY_FIRST <= locking.RETRY_MAX <= 0.1
