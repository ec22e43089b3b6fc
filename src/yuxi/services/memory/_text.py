"""Pure text semantics of MEMORY.md: the prompt snapshot, line-aligned dedupe, exact replace.

No I/O here, so every rule is unit-testable on strings, and the unit-test fake of the memory
service (``tests/support/agent_fakes.py``) runs exactly these functions. Refusals raise the
model-facing errors of :mod:`yuxi.errors`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from yuxi.errors import MemoryConflict, MemoryInvalidEncoding, MemoryTooLarge
from yuxi.limits import MEMORY_FILE_MAX_BYTES, MEMORY_PROMPT_MAX_BYTES
from yuxi.utils.string_utils import cut_to_char_boundary

__all__ = [
    "PROMPT_TRUNCATION_NOTE",
    "MemoryEdit",
    "MemorySnapshot",
    "apply_add",
    "apply_replace",
    "decode_memory_file",
    "encode_result",
    "find_whole_lines",
    "snapshot_of",
]

PROMPT_TRUNCATION_NOTE = "\n…[memory truncated: only the first 24 KiB of MEMORY.md is shown]"


@dataclass(frozen=True)
class MemorySnapshot:
    """The memory text injected into one run, and its fingerprint (recorded on the run)."""

    text: str
    sha256: str
    size: int
    truncated: bool


def snapshot_of(data: bytes, truncated: bool) -> MemorySnapshot:
    """The snapshot of a ``MEMORY_PROMPT_MAX_BYTES``-bounded read of MEMORY.md.

    A cut read ends on a character boundary and gets :data:`PROMPT_TRUNCATION_NOTE`; blank or
    non-UTF-8 memory is no memory (fail closed: mangled bytes are never injected, and
    ``remember_memory`` reports the encoding).
    """
    if truncated or len(data) > MEMORY_PROMPT_MAX_BYTES:
        data, truncated = cut_to_char_boundary(data[:MEMORY_PROMPT_MAX_BYTES]), True
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text, truncated = "", False
    if not text.strip():
        text, truncated = "", False
    elif truncated:
        text += PROMPT_TRUNCATION_NOTE
    raw = text.encode("utf-8")
    return MemorySnapshot(text, hashlib.sha256(raw).hexdigest(), len(raw), truncated)


@dataclass(frozen=True)
class MemoryEdit:
    """The outcome of applying one add/correct to the current file text."""

    changed: bool
    text: str
    start_line: int
    end_line: int


def _normalise_line(line: str) -> str:
    return " ".join(line.split())


def _content_lines(text: str) -> list[tuple[int, str]]:
    """(1-based line number, whitespace-normalised text) of every non-blank line."""
    return [
        (number, norm)
        for number, line in enumerate(text.splitlines(), start=1)
        if (norm := _normalise_line(line))
    ]


def find_whole_lines(base: str, content: str) -> tuple[int, int] | None:
    """Where the normalised ``content`` occurs as consecutive whole (non-blank) lines of ``base``.

    A fragment of a longer line is not a match: lines compare whole, after whitespace runs are
    collapsed. Returns the 1-based inclusive line span in ``base``, or None.
    """
    needle = [norm for _, norm in _content_lines(content)]
    if not needle:
        return None
    # Necessary conditions first, cheapest first (a new fact, the common case, fails one and no
    # line needs normalising one by one): every word of the content occurs in the
    # file; the content's lines, joined by one space, occur in the file with its whitespace
    # collapsed (every line break str.splitlines knows is whitespace to str.split).
    if not all(word in base for line in needle for word in line.split(" ")):
        return None
    if " ".join(needle) not in " ".join(base.split()):
        return None
    hay = _content_lines(base)
    for i in range(len(hay) - len(needle) + 1):
        if all(hay[i + k][1] == needle[k] for k in range(len(needle))):
            return hay[i][0], hay[i + len(needle) - 1][0]
    return None


def _line_count(text: str) -> int:
    return len(text.splitlines()) or 1


def apply_add(base: str, content: str) -> MemoryEdit:
    """Append ``content`` at the end unless it is already there as whole lines."""
    content = content.strip()
    found = find_whole_lines(base, content)
    if found is not None:
        return MemoryEdit(False, base, found[0], found[1])
    head = base.rstrip()
    if head:
        text = head + "\n\n" + content + "\n"
        start = _line_count(head) + 2
    else:
        text = content + "\n"
        start = 1
    return MemoryEdit(True, text, start, start + _line_count(content) - 1)


def apply_replace(base: str, replaces: str, content: str) -> MemoryEdit:
    """Replace the single exact (case-sensitive) occurrence of ``replaces`` with ``content``."""
    content = content.strip()
    first = base.find(replaces)
    if first < 0:
        raise MemoryConflict(
            "the text to replace was not found in memory; read the memory and try again",
        )
    # Overlapping occurrences count too: "aa" occurs twice in "aaa".
    if base.find(replaces, first + 1) >= 0:
        raise MemoryConflict(
            "the text to replace occurs more than once in memory; quote a longer, unique passage",
        )
    text = base[:first] + content + base[first + len(replaces) :]
    start = base.count("\n", 0, first) + 1
    end = start + content.count("\n")
    return MemoryEdit(text != base, text, start, end)


def decode_memory_file(data: bytes) -> str:
    try:
        return data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise MemoryInvalidEncoding(
            f"MEMORY.md is not valid UTF-8 (byte {exc.start}); fix it in the workspace file editor",
        ) from None


def encode_result(text: str) -> bytes:
    data = text.encode("utf-8")
    if len(data) > MEMORY_FILE_MAX_BYTES:
        raise MemoryTooLarge(
            f"the memory file would be {len(data)} bytes; the limit is {MEMORY_FILE_MAX_BYTES}. "
            "Ask the user to tidy MEMORY.md in the workspace file editor.",
        )
    return data
