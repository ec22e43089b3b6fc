"""Storage of user memory: the per-user write gate (lease check and advisory lock in one
statement) and the version history with its running totals (design.md §3, §5).

Public surface: the two repositories, the gate's answer, the statement that takes the per-user
memory lock (a run's terminal update takes it too) and the version rows.
"""

from yuxi.repositories.memory._gate import MemoryGate, MemoryWriteAuthorization, lock_user_memory
from yuxi.repositories.memory.version_repository import (
    EMPTY_SHA256,
    MemoryVersionRepository,
    NewVersion,
    Quota,
)

__all__ = [
    "EMPTY_SHA256",
    "MemoryGate",
    "MemoryVersionRepository",
    "MemoryWriteAuthorization",
    "NewVersion",
    "Quota",
    "lock_user_memory",
]
