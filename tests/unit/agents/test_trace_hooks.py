"""LangSmith's bookkeeping of a traceable call stays on the event loop while tracing is off, and
goes to the thread pool, as LangSmith does by default, while it is on (``yuxi.agents.trace_hooks``).

Driven through LangSmith's own ``traceable`` (what ``create_agent`` wraps middleware hooks in),
with the hops counted where they pass (``tests.support.statements.thread_hops``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import langsmith
import pytest
from langsmith import traceable

from tests.support.statements import thread_hops
from yuxi.agents.trace_hooks import keep_untraced_hooks_on_the_loop


@pytest.fixture
def installed() -> Iterator[None]:
    keep_untraced_hooks_on_the_loop()
    try:
        yield
    finally:
        langsmith.set_runtime_overrides()  # the default again, for the tests that follow


@traceable(name="hook")
async def _hook(value: str) -> str:
    return f"{value}:{threading.current_thread() is threading.main_thread()}"


async def test_an_untraced_call_makes_no_thread_hop(installed: None) -> None:
    with thread_hops() as hops:
        assert await _hook("qzxhook") == "qzxhook:True"
    assert hops == []


async def test_without_the_override_it_makes_two(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule's reason, held: LangSmith's default opens and closes the trace in the pool."""
    monkeypatch.delenv("LANGSMITH_TRACING", raising=False)
    langsmith.set_runtime_overrides()  # as if no runtime had installed it in this process
    with thread_hops() as hops:
        assert await _hook("qzxhook") == "qzxhook:True"
    assert hops == ["_setup_run", "_handle_container_end"]


async def test_a_traced_call_keeps_langsmiths_default(installed: None) -> None:
    # Tracing on for this block only, kept in the process ("local": nothing is sent; the client,
    # which would send to a closed port, is never asked to).
    client = langsmith.Client(api_key="qzx-not-a-key", api_url="http://127.0.0.1:9")
    with (
        langsmith.tracing_context(enabled="local", client=client),
        thread_hops() as hops,
    ):
        assert await _hook("qzxhook") == "qzxhook:True"
    assert hops == ["_setup_run", "_handle_container_end"]
