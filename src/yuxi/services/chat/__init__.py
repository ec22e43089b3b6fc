"""Chat as a user lives it: threads (create, list, view, archive, delete), posting a message as
a run, approval decisions as resume runs, and the views the API serialises.

Public surface: :class:`ChatService`, the title rules, and the views (:mod:`.views`).
"""

from yuxi.services.chat.service import ChatService, auto_title, check_thread_title
from yuxi.services.chat.views import (
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
    "MemorySnapshotView",
    "MessageSummary",
    "RunErrorView",
    "RunSummary",
    "StreamPage",
    "ThreadDetail",
    "ThreadSummary",
    "ToolCallSummary",
    "auto_title",
    "check_thread_title",
    "run_view",
    "thread_summary",
]
