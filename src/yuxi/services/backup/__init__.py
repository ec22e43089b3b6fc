"""Backup and restore of a whole deployment: the database and every workspace in one archive
(``yuxi backup`` / ``yuxi restore``; design.md "Backup and restore").

Public surface: the two services, what they return, the archive's format constants and the
manifest (tests read it back).
"""

from yuxi.services.backup._archive import verify_archive
from yuxi.services.backup._manifest import (
    DATABASE_MEMBER,
    FORMAT_VERSION,
    MANIFEST_MEMBER,
    ArchivedFile,
    Manifest,
    parse_manifest,
    workspace_member,
)
from yuxi.services.backup.backup import BackupResult, BackupService
from yuxi.services.backup.restore import RestoreResult, RestoreService, workspace_root_entries

__all__ = [
    "DATABASE_MEMBER",
    "FORMAT_VERSION",
    "MANIFEST_MEMBER",
    "ArchivedFile",
    "BackupResult",
    "BackupService",
    "Manifest",
    "RestoreResult",
    "RestoreService",
    "parse_manifest",
    "verify_archive",
    "workspace_member",
    "workspace_root_entries",
]
