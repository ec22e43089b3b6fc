"""Pure rules for names inside a workspace: user directory names, relative paths, temp names.

Nothing here touches the filesystem. The rules are deliberately narrower than what POSIX allows:
a path that passes :func:`split_relative_path` can be walked one component at a time from the
workspace directory without any component meaning "go up", "stay", or "start over at /".
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets

from yuxi.errors import InvalidArgument, UnsafePath

MAX_COMPONENT_BYTES = 255
MAX_PATH_BYTES = 1024
_PREFIX_MAX_CHARS = 24
_HASH_HEX_CHARS = 32
_TEMP_HEX_CHARS = 32
_TEMP_SUFFIX = ".tmp"
# "." + name + "." + hex + ".tmp" must itself be a valid component.
_TEMP_OVERHEAD_BYTES = 1 + 1 + _TEMP_HEX_CHARS + len(_TEMP_SUFFIX)
_TEMP_NAME_RE = re.compile(rf"\A\..+\.[0-9a-f]{{{_TEMP_HEX_CHARS}}}\.tmp\Z", re.DOTALL)
_UNSAFE_PREFIX_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def workspace_dirname(uid: str) -> str:
    """Directory name of the workspace of ``uid``: readable prefix + ``-`` + sha256 prefix.

    The prefix keeps only ``[A-Za-z0-9_-]`` (at most 24 characters) so operators can recognise
    the user; the 128-bit hash of the full uid makes distinct uids map to distinct names.
    """
    if not isinstance(uid, str) or not uid:
        raise InvalidArgument("uid must be a non-empty string")
    return _dirname_of(uid)


@functools.lru_cache(maxsize=4096)  # a pure function of uid, asked on every memory write
def _dirname_of(uid: str) -> str:
    try:
        uid_bytes = uid.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgument("uid is not valid Unicode (lone surrogate)") from exc
    prefix = _UNSAFE_PREFIX_CHARS.sub("_", uid).lstrip("-_")[:_PREFIX_MAX_CHARS] or "u"
    digest = hashlib.sha256(uid_bytes).hexdigest()[:_HASH_HEX_CHARS]
    return f"{prefix}-{digest}"


def is_temp_name(name: str) -> bool:
    """True for names produced by :func:`make_temp_name` (in-flight or stale publish temps)."""
    return _TEMP_NAME_RE.match(name) is not None


def make_temp_name(target_name: str) -> str:
    """A fresh, unguessable temp name ``.<target>.<32 hex>.tmp`` that fits in one component.

    A long target name is shortened (on a code point boundary) so the temp name stays within
    255 bytes; the random part alone guarantees uniqueness.
    """
    budget = MAX_COMPONENT_BYTES - _TEMP_OVERHEAD_BYTES
    stem = target_name
    while len(stem.encode("utf-8")) > budget:
        stem = stem[:-1]
    return f".{stem}.{secrets.token_hex(_TEMP_HEX_CHARS // 2)}{_TEMP_SUFFIX}"


def split_relative_path(path: object, *, allow_empty: bool = False) -> tuple[str, ...]:
    """Validate a workspace-relative POSIX path and return its components.

    Refused with :class:`UnsafePath`: non-strings, the empty string (unless ``allow_empty``, which
    then means the workspace directory itself and yields ``()``), NUL, backslash, lone surrogates,
    absolute paths, ``.`` / ``..`` / empty components (``a//b``, trailing ``/``), components over
    255 UTF-8 bytes, paths over 1024 UTF-8 bytes, and names reserved for publish temp files.
    """
    if not isinstance(path, str):
        raise UnsafePath(f"path must be a string, not {type(path).__name__}")
    if path == "":
        if allow_empty:
            return ()
        raise UnsafePath("path must not be empty")
    if "\x00" in path:
        raise UnsafePath("path must not contain NUL")
    if "\\" in path:
        raise UnsafePath(f"path must not contain a backslash: {path!r}")
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UnsafePath("path is not valid Unicode (lone surrogate)") from exc
    if len(encoded) > MAX_PATH_BYTES:
        raise UnsafePath(f"path is {len(encoded)} bytes long; the limit is {MAX_PATH_BYTES}")
    if path.startswith("/"):
        raise UnsafePath(f"path must be relative to the workspace, not absolute: {path!r}")
    components = tuple(path.split("/"))
    for component in components:
        if component == "":
            raise UnsafePath(f"path has an empty component: {path!r}")
        if component in (".", ".."):
            raise UnsafePath(f"path must not contain '.' or '..' components: {path!r}")
        if len(component.encode("utf-8")) > MAX_COMPONENT_BYTES:
            raise UnsafePath(
                f"path component is longer than {MAX_COMPONENT_BYTES} bytes: {component[:40]!r}…"
            )
        if is_temp_name(component):
            raise UnsafePath(f"name is reserved for temporary files: {component!r}")
    return components
