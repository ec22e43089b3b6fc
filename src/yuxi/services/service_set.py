"""The one set of services every entry point uses, built once by ``yuxi.bootstrap``."""

from __future__ import annotations

from dataclasses import dataclass

from yuxi.services.accounts import AccountService
from yuxi.services.backup import BackupService, RestoreService
from yuxi.services.chat.service import ChatService
from yuxi.services.health_service import HealthService
from yuxi.services.lookback.service import LookbackService
from yuxi.services.memory.service import MemoryService
from yuxi.services.memory.version_service import MemoryVersionService
from yuxi.services.runs.service import RunService
from yuxi.services.user_service import UserService
from yuxi.services.workspace_file_service import WorkspaceFileService

__all__ = ["Services"]


@dataclass(frozen=True)
class Services:
    """Every service, built once. Routes, workers, the CLI and tests call these and nothing
    below them (no session, no repository, no SQL)."""

    chat: ChatService
    memory: MemoryService
    memory_versions: MemoryVersionService
    lookback: LookbackService
    users: UserService
    files: WorkspaceFileService
    runs: RunService
    health: HealthService
    backup: BackupService
    restore: RestoreService
    accounts: AccountService
