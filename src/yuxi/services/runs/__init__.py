"""The run lifecycle as a worker lives it: claim, heartbeat, the lease-fenced record, finish,
reconcile (design.md §7).

Public surface: :class:`RunService` and the values it takes and returns.
"""

from yuxi.services.runs.service import (
    ClaimedRun,
    Heartbeat,
    LeaseLost,
    PreviousRun,
    ProposedToolCall,
    ReconciledRun,
    RunRecord,
    RunService,
    ToolOutcome,
)

__all__ = [
    "ClaimedRun",
    "Heartbeat",
    "LeaseLost",
    "PreviousRun",
    "ProposedToolCall",
    "ReconciledRun",
    "RunRecord",
    "RunService",
    "ToolOutcome",
]
