"""The event loop the long-running commands (``serve``, ``run``, ``worker``) run on.

``YUXI_EVENT_LOOP=uvloop`` (the default) runs them on uvloop, the libuv event loop uvicorn's own
"standard" install uses: the same asyncio API with its scheduling, sockets and timers in C, so a
server spends less of its one core per request, stream and run. ``asyncio`` runs the standard
library's loop instead (to compare the two, or to debug with asyncio's own tools). A short
command (``yuxi users …``, ``yuxi db …``) keeps the standard loop: it does not live long enough
for the loop's cost to matter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from yuxi.errors import ConfigurationError
from yuxi.settings import EventLoop

__all__ = ["run_on"]

T = TypeVar("T")


def _factory(kind: EventLoop) -> Callable[[], asyncio.AbstractEventLoop] | None:
    if kind == "asyncio":
        return None
    try:
        import uvloop
    except ImportError as exc:  # a platform without a uvloop build (Windows)
        raise ConfigurationError(
            "YUXI_EVENT_LOOP=uvloop, but uvloop is not installed on this platform; "
            "set YUXI_EVENT_LOOP=asyncio"
        ) from exc
    return uvloop.new_event_loop


def run_on(kind: EventLoop, main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the event loop ``kind`` names."""
    try:
        factory = _factory(kind)
    except BaseException:
        main.close()  # never awaited: say so now rather than warn at exit
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)
