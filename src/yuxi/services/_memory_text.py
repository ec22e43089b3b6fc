"""Pure text semantics of ``remember_memory``: validation, line-aligned dedupe, exact replace.

No I/O here, so every rule is unit-testable on strings.
"""

from __future__ import annotations

from dataclasses import dataclass

CONTENT_MAX_BYTES = 4096
REPLACES_MAX_BYTES = 4096
MEMORY_FILE_MAX_BYTES = 128 * 1024


class MemoryEditError(Exception):
    """A refused edit; ``code`` is the structured tool-result code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class MemoryEdit:
    """The outcome of applying one add/correct to the current file text."""

    changed: bool
    text: str
    start_line: int
    end_line: int


def check_text_argument(name: str, value: object, max_bytes: int) -> str:
    """Validate a model-supplied text argument; returns it unchanged or raises invalid_argument."""
    if not isinstance(value, str):
        raise MemoryEditError("invalid_argument", f"{name} must be a string")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise MemoryEditError(
            "invalid_argument", f"{name} is not valid Unicode (lone surrogate)"
        ) from None
    if "\x00" in value:
        raise MemoryEditError("invalid_argument", f"{name} must not contain NUL characters")
    if not value.strip():
        raise MemoryEditError("invalid_argument", f"{name} must not be blank")
    if size > max_bytes:
        raise MemoryEditError(
            "invalid_argument", f"{name} is {size} UTF-8 bytes; the limit is {max_bytes}"
        )
    return value


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
    hay = _content_lines(base)
    if not needle:
        return None
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
        raise MemoryEditError(
            "memory_conflict",
            "the text to replace was not found in memory; read the memory and try again",
        )
    # Overlapping occurrences count too: "aa" occurs twice in "aaa".
    if base.find(replaces, first + 1) >= 0:
        raise MemoryEditError(
            "memory_conflict",
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
        raise MemoryEditError(
            "memory_invalid_encoding",
            f"MEMORY.md is not valid UTF-8 (byte {exc.start}); fix it in the workspace file editor",
        ) from None


def encode_result(text: str) -> bytes:
    data = text.encode("utf-8")
    if len(data) > MEMORY_FILE_MAX_BYTES:
        raise MemoryEditError(
            "memory_too_large",
            f"the memory file would be {len(data)} bytes; the limit is {MEMORY_FILE_MAX_BYTES}. "
            "Ask the user to tidy MEMORY.md in the workspace file editor.",
        )
    return data
