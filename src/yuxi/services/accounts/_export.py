"""Writing an account export: one zip, written entry by entry, a page of rows at a time.

The zip is written to a file object the caller gives (a temporary file for the API, the
``--out`` file for the CLI), never built in memory: what is held at any moment is one page of
rows (``ACCOUNT_EXPORT_PAGE_ROWS``) or one workspace file (at most
``ACCOUNT_EXPORT_FILE_MAX_BYTES``), plus zlib's window. The writes run in a worker thread, one
page at a time, so compressing never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import zipfile
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import IO, Any

from yuxi.db.models import AgentRun, Conversation, Message, ToolCall
from yuxi.services.chat import run_view, thread_summary

__all__ = [
    "ACCOUNT_EXPORT_FORMAT",
    "ACCOUNT_EXPORT_VERSION",
    "ExportWriter",
    "message_record",
    "run_record",
    "thread_record",
]

ACCOUNT_EXPORT_FORMAT = "yuxi-account-export"
ACCOUNT_EXPORT_VERSION = 1


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


def json_line(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, default=_default) + "\n").encode()


def json_document(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, indent=2, default=_default) + "\n").encode()


def thread_record(conversation: Conversation) -> dict[str, Any]:
    """The thread as the API shows it, plus ``deleted_at``: a thread in the trash (status
    ``deleted``, still restorable) is exported like any other; a purged one is gone."""
    record = dataclasses.asdict(thread_summary(conversation))
    record["deleted_at"] = conversation.deleted_at
    return {"thread": record}


def _tool_call(call: ToolCall) -> dict[str, Any]:
    """A tool call whole (the thread view cuts its result; an export keeps everything)."""
    return {
        "tool_call_id": call.tool_call_id,
        "name": call.name,
        "input": call.input,
        "output": call.output,
        "status": call.status,
        "error": call.error,
        "created_at": call.created_at,
    }


def message_record(message: Message, calls: Iterable[ToolCall]) -> dict[str, Any]:
    return {
        "message": {
            "message_id": message.id,
            "role": message.role,
            "message_type": message.message_type,
            "content": message.content,
            "metadata": message.metadata_,
            "image_content": message.image_content,
            "attachments": message.attachments,
            "run_id": message.run_id,
            "created_at": message.created_at,
            "tool_calls": [_tool_call(c) for c in calls],
        }
    }


def run_record(run: AgentRun) -> dict[str, Any]:
    """The run as the API shows it (status, error, output, usage), plus its memory write
    quota used."""
    record = dataclasses.asdict(run_view(run))
    record["memory_writes"] = run.memory_writes
    record["memory_write_bytes"] = run.memory_write_bytes
    return record


class ExportWriter:
    """The zip being written. ``open_entry`` starts an entry; ``write`` appends to it."""

    def __init__(self, out: IO[bytes]) -> None:
        self._zip = zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED)
        self._entry: IO[bytes] | None = None
        self.entries: list[str] = []

    def _open_sync(self, name: str) -> None:
        self._close_entry_sync()
        info = zipfile.ZipInfo(name, date_time=datetime.now(UTC).timetuple()[:6])
        info.compress_type = zipfile.ZIP_DEFLATED
        self._entry = self._zip.open(info, "w", force_zip64=True)
        self.entries.append(name)

    def _close_entry_sync(self) -> None:
        if self._entry is not None:
            self._entry.close()
            self._entry = None

    def _write_sync(self, chunks: list[bytes]) -> None:
        if self._entry is None:
            raise RuntimeError("write() before open_entry()")
        for chunk in chunks:
            self._entry.write(chunk)

    async def open_entry(self, name: str) -> None:
        await asyncio.to_thread(self._open_sync, name)

    async def write(self, chunks: list[bytes]) -> None:
        if chunks:
            await asyncio.to_thread(self._write_sync, chunks)

    async def entry(self, name: str, data: bytes) -> None:
        """A whole small entry at once."""
        await self.open_entry(name)
        await self.write([data])

    async def close(self) -> None:
        def finish() -> None:
            self._close_entry_sync()
            self._zip.close()

        await asyncio.to_thread(finish)
