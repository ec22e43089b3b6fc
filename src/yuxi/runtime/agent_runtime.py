"""What executing agent runs needs beyond the services: the chat model, the checkpointer and
the compiled graphs (:class:`~yuxi.runtime.graph_cache.GraphCache`).

Opened by :func:`yuxi.bootstrap.open_agent_runtime` only in processes that execute runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from yuxi.observability.metrics import Metrics
from yuxi.runtime.graph_cache import GraphCache

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["AgentRuntime", "RunLimits"]


@dataclass(frozen=True)
class RunLimits:
    """One run's budget (the YUXI_RUN_* settings): model calls, tool calls, wall clock."""

    model_calls: int
    tool_calls: int
    timeout_seconds: float


@dataclass(frozen=True)
class AgentRuntime:
    """What executing agent runs needs beyond :class:`Services`."""

    model: BaseChatModel
    checkpointer: Any  # langgraph's AsyncPostgresSaver
    limits: RunLimits
    #: Where the executor reports run durations (the container's; a fresh one in tests).
    metrics: Metrics = field(default_factory=Metrics)
    #: The graphs compiled for this runtime. Never an argument: every instance (also one made
    #: by ``dataclasses.replace``) starts with its own empty cache.
    graphs: GraphCache = field(default_factory=GraphCache, init=False, repr=False, compare=False)
