"""The one set of services every entry point uses, built once by ``yuxi.bootstrap``."""

from __future__ import annotations

from dataclasses import dataclass

from yuxi.services.chat_service import ChatService
from yuxi.services.health_service import HealthService
from yuxi.services.lookback_service import LookbackService
from yuxi.services.memory_history_service import MemoryHistoryService
from yuxi.services.memory_service import MemoryService
from yuxi.services.run_service import RunService
from yuxi.services.user_service import UserService
from yuxi.services.workspace_file_service import WorkspaceFileService

__all__ = ["Services"]


@dataclass(frozen=True)
class Services:
    """Every service, built once. Routes, workers, the CLI and tests call these and nothing
    below them (no session, no repository, no SQL)."""

    chat: ChatService
    memory: MemoryService
    memory_history: MemoryHistoryService
    lookback: LookbackService
    users: UserService
    files: WorkspaceFileService
    runs: RunService
    health: HealthService
