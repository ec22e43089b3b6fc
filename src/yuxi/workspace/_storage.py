"""A write the data dir's filesystem refuses becomes one of two clear errors (design.md §5.6a).

* ``ENOSPC`` (no space) and ``EDQUOT`` (quota used) → :class:`~yuxi.errors.StorageFull`;
* ``EROFS`` (a read-only mount) and ``EACCES`` (not writable by the server's user, e.g. a
  read-only bind of a volume owned by someone else) → :class:`~yuxi.errors.StorageReadOnly`.

Every other ``OSError`` (``EIO``, …) stays what it is. The error is raised *after* the publish
step has cleaned up (temp removed, target untouched), so the message may say nothing changed.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager

from yuxi.errors import StorageFull, StorageReadOnly, YuxiError

NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
READ_ONLY_ERRNOS = frozenset({errno.EROFS, errno.EACCES})


def storage_error(exc: OSError, what: str) -> YuxiError | None:
    """The clear error for a write of ``what`` that failed with ``exc``, or ``None``."""
    if exc.errno in NO_SPACE_ERRNOS:
        return StorageFull(
            f"the disk holding the data directory is full; nothing was changed ({what}). The "
            "same write works once space is freed"
        )
    if exc.errno in READ_ONLY_ERRNOS:
        return StorageReadOnly(
            f"the data directory is read-only; nothing was changed ({what}). The same write "
            "works once it is writable again"
        )
    return None


@contextmanager
def refused_writes(what: str) -> Iterator[None]:
    """Turn a full or read-only filesystem's ``OSError`` inside the block into its clear error
    (the ``OSError`` stays attached as ``__cause__``)."""
    try:
        yield
    except OSError as exc:
        clear = storage_error(exc, what)
        if clear is None:
            raise
        raise clear from exc
