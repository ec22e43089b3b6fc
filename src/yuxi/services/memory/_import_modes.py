"""What an import makes of MEMORY.md, by mode (pure; design.md §10.5).

``replace``: the imported file, as it is. ``append``: the current file, then each imported entry
that is not already an entry of it (or an earlier imported one), in the imported order. Two
entries are the same when their text is, once the list marker is dropped and runs of
whitespace are one space (``- a  b`` and ``* a b`` are one entry). The current file's bytes are
kept, except blank lines at its end; an appended list item follows a list item on the next
line, anything else is set apart by a blank line, so the entries of the result are exactly the
current ones followed by the appended ones (``split_entries`` of the result says so; tested).
"""

from __future__ import annotations

from dataclasses import dataclass

from yuxi.errors import FileTooLarge, InvalidArgument
from yuxi.limits import MEMORY_FILE_MAX_BYTES
from yuxi.services.memory._entries import MemoryEntry, split_entries, strip_list_marker
from yuxi.vocabulary import MEMORY_IMPORT_MODES

__all__ = ["ImportPlan", "check_import_mode", "plan_import"]


@dataclass(frozen=True, slots=True)
class ImportPlan:
    """The file an import would publish, and how its entries compare with the current ones."""

    mode: str
    data: bytes
    current_entries: int
    imported_entries: int
    #: Imported entries that are not already in the current file (the ones an append adds).
    new_entries: int


def check_import_mode(mode: object) -> str:
    if mode not in MEMORY_IMPORT_MODES:
        raise InvalidArgument("mode must be " + " or ".join(repr(m) for m in MEMORY_IMPORT_MODES))
    return str(mode)


def _key(entry: MemoryEntry) -> str:
    return " ".join(strip_list_marker(entry.text).split())


def _is_list_item(entry_text: str) -> bool:
    return strip_list_marker(entry_text) != entry_text


def plan_import(current: bytes, imported: bytes, mode: str) -> ImportPlan:
    """The import of ``imported`` (checked UTF-8) over ``current`` in ``mode``. An append that
    would pass the file limit is refused (:class:`FileTooLarge`), nothing written."""
    current_text = current.decode("utf-8", errors="replace")
    have = split_entries(current_text)
    incoming = split_entries(imported.decode("utf-8"))
    seen = {_key(e) for e in have}
    fresh: list[MemoryEntry] = []
    for entry in incoming:
        if _key(entry) not in seen:
            seen.add(_key(entry))
            fresh.append(entry)
    if mode == "replace":
        data = imported
    elif not fresh:
        data = current
    else:
        text = current_text.rstrip("\r\n") if have else ""
        previous = have[-1].text if have else None
        for entry in fresh:
            if previous is None:
                joint = ""
            elif _is_list_item(previous) and _is_list_item(entry.text):
                joint = "\n"
            else:
                joint = "\n\n"
            text += joint + entry.text
            previous = entry.text
        data = (text + "\n").encode("utf-8")
        if len(data) > MEMORY_FILE_MAX_BYTES:
            raise FileTooLarge(
                f"appended, MEMORY.md would be {len(data)} bytes (UTF-8), over its limit of "
                f"{MEMORY_FILE_MAX_BYTES}; nothing was written. Remove entries first, or "
                "replace the file instead"
            )
    return ImportPlan(mode, data, len(have), len(incoming), len(fresh))
