"""How the long-running commands (``serve``, ``run``, ``worker``) run: their event loop and
their garbage collector.

**The event loop.**
``YUXI_EVENT_LOOP=uvloop`` (the default) runs them on uvloop, the libuv event loop uvicorn's own
"standard" install uses: the same asyncio API with its scheduling, sockets and timers in C, so a
server spends less of its one core per request, stream and run. ``asyncio`` runs the standard
library's loop instead (to compare the two, or to debug with asyncio's own tools). A short
command (``yuxi users …``, ``yuxi db …``) keeps the standard loop: it does not live long enough
for the loop's cost to matter.

**The garbage collector** (:func:`settle_garbage_collector`, once the process is up). CPython's
cyclic collector runs its youngest generation after every 700 net allocations of container
objects, and a run allocates hundreds of thousands (messages, LangGraph's channels and tasks,
rows): most of its passes find nothing, since almost everything a run makes is freed by
reference counting when the run ends. Once the server is up, everything it made to get there
(modules, the container, the compiled graphs) is moved out of the collector's sight
(``gc.freeze()``: those objects live as long as the process) and the youngest generation is
collected after :data:`YOUNG_THRESHOLD` allocations instead: far fewer passes over the same
short-lived objects. The older generations keep CPython's default ratios to it, so they too
run less often, in proportion. What this gives up: cyclic garbage waits longer to be freed, so
the process holds somewhat more memory between collections; nothing a collection would free is
kept for good (the frozen objects were reachable when frozen).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from yuxi.errors import ConfigurationError
from yuxi.settings import EventLoop

__all__ = ["YOUNG_THRESHOLD", "run_on", "settle_garbage_collector"]

#: Allocations of container objects between two collections of the youngest generation, once
#: the process is up (CPython's default: 700).
YOUNG_THRESHOLD = 50_000

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


def settle_garbage_collector() -> None:
    """Once the process is up: what it holds now leaves the collector's sight for good, and the
    youngest generation is collected less often (see the module's docstring)."""
    gc.collect()  # what start-up left as garbage is freed, not frozen
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, oldest)
