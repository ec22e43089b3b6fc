"""LangSmith's trace hooks, kept on the event loop while tracing is off.

``create_agent`` wraps every middleware's ``awrap_model_call`` / ``awrap_tool_call`` in
LangSmith's ``traceable``. Its async wrapper opens and closes the (disabled) trace of each call
in the event loop's thread pool: two thread hops per hook per model call, fourteen in a run with
one tool call, each a worker thread woken, a contended handoff of the GIL and the loop woken
again, for bookkeeping that does no I/O when no trace is recorded.

:func:`keep_untraced_hooks_on_the_loop` installs LangSmith's public runtime override
(``langsmith.set_runtime_overrides``) so that, while tracing is off in the caller's context, that
bookkeeping runs inline in the given context, as LangSmith's own documentation of the override
describes; with tracing on (``LANGSMITH_TRACING=true``, a ``tracing_context``, a run tree in
progress) it goes to the thread pool exactly as before. Process-wide, idempotent: it is
installed with each runtime's graph cache (:class:`~yuxi.runtime.graph_cache.GraphCache`),
before any graph is compiled.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Any

import langsmith
from langsmith.utils import tracing_is_enabled

__all__ = ["keep_untraced_hooks_on_the_loop"]

_Default = Callable[..., Awaitable[Any]]


async def _inline_unless_tracing(
    default: _Default, ctx: contextvars.Context, func: Callable[..., Any], /, *args: Any, **kw: Any
) -> Any:
    # Decided in the caller's context (``ctx`` is a copy of it, or the trace's own): a trace
    # being recorded keeps LangSmith's default, which may block on its client.
    if tracing_is_enabled():
        return await default(ctx, func, *args, **kw)
    return ctx.run(func, *args, **kw)


def keep_untraced_hooks_on_the_loop() -> None:
    langsmith.set_runtime_overrides(aio_to_thread=_inline_unless_tracing)
