"""A user's whole account: the streamed zip export and the complete deletion (design.md §12).

Public surface: :class:`AccountService`, what it returns, and the export's format name and
version.
"""

from yuxi.services.accounts._export import ACCOUNT_EXPORT_FORMAT, ACCOUNT_EXPORT_VERSION
from yuxi.services.accounts.service import AccountExport, AccountService, DeletedAccount

__all__ = [
    "ACCOUNT_EXPORT_FORMAT",
    "ACCOUNT_EXPORT_VERSION",
    "AccountExport",
    "AccountService",
    "DeletedAccount",
]
