"""What executing agent runs needs beyond the services: the chat model and the checkpointer.

Opened by :func:`yuxi.bootstrap.open_agent_runtime` only in processes that execute runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from yuxi.observability.metrics import Metrics

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
