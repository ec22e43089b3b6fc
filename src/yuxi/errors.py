"""Every exception Yuxi raises on purpose, in one tree.

Three audiences, three kinds of error (kept apart on purpose):

* **tell the developer** — :class:`ConfigurationError`, raised at start-up when settings or the
  environment cannot work (bad database URL, data dir under a home directory, ...);
* **tell the user** — :class:`YuxiError` subclasses carry a stable ``code``; the HTTP layer maps
  them to status codes in one place (``yuxi.api.errors``);
* **tell the model** — tools never raise to the agent: they return structured results
  ``{"status": "error", "code": ..., "error": ...}`` built from the same codes.

::

    YuxiError (code)
    ├── ConfigurationError                 configuration_error
    ├── InvalidArgument                    invalid_argument
    ├── NotFound                           not_found
    ├── Conflict                           conflict
    │   ├── PreconditionFailed             precondition_failed   (stale ETag / If-Match)
    │   └── ActiveRunExists                active_run_exists
    ├── Unauthorized                       unauthorized
    ├── WorkspaceError                     workspace_error
    │   ├── UnsafePath                     unsafe_path           (.., absolute, NUL, backslash)
    │   ├── SymlinkRefused                 symlink_refused       (a symlink on the path)
    │   ├── NotARegularFile                not_regular_file
    │   ├── WorkspaceFileNotFound          file_not_found
    │   └── FileTooLarge                   file_too_large
    └── StorageUnavailable                 storage_unavailable   (database / lock failure)
"""

from __future__ import annotations


class YuxiError(Exception):
    """Base of every deliberate Yuxi error. ``code`` is stable and machine-readable."""

    code: str = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigurationError(YuxiError):
    code = "configuration_error"


class InvalidArgument(YuxiError):
    code = "invalid_argument"


class NotFound(YuxiError):
    code = "not_found"


class Conflict(YuxiError):
    code = "conflict"


class PreconditionFailed(Conflict):
    code = "precondition_failed"


class ActiveRunExists(Conflict):
    code = "active_run_exists"


class Unauthorized(YuxiError):
    code = "unauthorized"


class WorkspaceError(YuxiError):
    code = "workspace_error"


class UnsafePath(WorkspaceError):
    code = "unsafe_path"


class SymlinkRefused(WorkspaceError):
    code = "symlink_refused"


class NotARegularFile(WorkspaceError):
    code = "not_regular_file"


class WorkspaceFileNotFound(WorkspaceError):
    code = "file_not_found"


class FileTooLarge(WorkspaceError):
    code = "file_too_large"


class StorageUnavailable(YuxiError):
    code = "storage_unavailable"
