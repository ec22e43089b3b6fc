"""Chat as a user lives it: threads (create, list, view, archive, delete), posting a message as
a run, approval decisions as resume runs, and the views the API serialises; the trash of
deleted threads (restore, purge: :class:`ThreadTrash`, ``ChatService.trash``).

Public surface: :class:`ChatService`, the title rules, the views (:mod:`.views`) and the
trash's.
"""

from yuxi.services.chat._rules import auto_title, check_thread_title
from yuxi.services.chat._trash import PurgeReport, ThreadTrash, TrashedThread, TrashList
from yuxi.services.chat.service import ChatService
from yuxi.services.chat.views import (
    DecisionView,
    MemorySnapshotView,
    MessageSummary,
    RunErrorView,
    RunSummary,
    StreamPage,
    ThreadDetail,
    ThreadSummary,
    ToolCallSummary,
    run_view,
    thread_summary,
)

__all__ = [
    "ChatService",
    "DecisionView",
    "MemorySnapshotView",
    "MessageSummary",
    "PurgeReport",
    "RunErrorView",
    "RunSummary",
    "StreamPage",
    "ThreadDetail",
    "ThreadSummary",
    "ThreadTrash",
    "ToolCallSummary",
    "TrashList",
    "TrashedThread",
    "auto_title",
    "check_thread_title",
    "run_view",
    "thread_summary",
]
