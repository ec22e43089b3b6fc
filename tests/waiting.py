"""Polling until a condition holds, for tests that watch other processes or tasks."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

import pytest


async def until(
    what: str,
    check: Callable[[], object | Awaitable[object]],
    *,
    within: float = 60.0,
    poll: float = 0.05,
) -> None:
    """Call ``check`` (plain or async) every ``poll`` seconds until it is true; fail the test
    naming ``what`` after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(poll)
