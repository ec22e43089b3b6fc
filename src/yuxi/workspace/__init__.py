"""Per-user workspace files on disk: the confined, locked, atomically published file tree
(design.md §4).

Public surface: :class:`Workspace` and its entries, the fixed paths, the ETag rules, the path
rules, and the per-user lock. :mod:`.locking` and :mod:`.publishing` are public modules because
tests observe and fault them at their OS-call seams (a flock attempt, a temp name); the
descriptor helpers and path internals stay private.
"""

from yuxi.workspace._paths import is_temp_name
from yuxi.workspace.filesystem import (
    AGENTS_PATH,
    MEMORY_PATH,
    USER_PATH,
    FileEntry,
    Workspace,
    etag_for,
    if_match_allows,
    split_relative_path,
    workspace_dirname,
)
from yuxi.workspace.locking import workspace_lock, workspace_lock_then

__all__ = [
    "AGENTS_PATH",
    "MEMORY_PATH",
    "USER_PATH",
    "FileEntry",
    "Workspace",
    "etag_for",
    "if_match_allows",
    "is_temp_name",
    "split_relative_path",
    "workspace_dirname",
    "workspace_lock",
    "workspace_lock_then",
]
