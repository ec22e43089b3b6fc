"""Storage of agent runs: the run rows and their leases, the event log, the tool-call records.

Public surface: the three repositories and the lease helpers a worker and its tests use.
"""

from yuxi.repositories.runs.agent_run_repository import (
    LEASE_EXPIRED,
    PARENT_RUN_ENDED,
    AgentRunRepository,
    new_worker_id,
    owned_live_lease,
)
from yuxi.repositories.runs.run_event_repository import RunEventRepository
from yuxi.repositories.runs.tool_call_repository import ToolCallRepository

__all__ = [
    "LEASE_EXPIRED",
    "PARENT_RUN_ENDED",
    "AgentRunRepository",
    "RunEventRepository",
    "ToolCallRepository",
    "new_worker_id",
    "owned_live_lease",
]
