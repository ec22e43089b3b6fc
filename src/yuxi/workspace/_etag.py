"""Strong ETags of file bytes, and the one parser of ``If-Match``."""

from __future__ import annotations

import hashlib

__all__ = ["etag_for", "if_match_allows"]


def etag_for(data: bytes) -> str:
    """Strong ETag of exact file bytes: ``"<sha256 hex>"`` (with the double quotes)."""
    return '"' + hashlib.sha256(data).hexdigest() + '"'


def if_match_allows(if_match: str | None, etag: str) -> bool:
    """Whether an ``If-Match`` header lets a write go ahead on a file whose ETag is ``etag``.

    No header (``None``) and ``*`` always allow; otherwise one of the comma-separated tags must
    equal ``etag`` by the *strong* comparison (RFC 9110 §13.1.1): a weak tag ``W/"…"`` never
    matches, even when its opaque part is equal. The one parser of If-Match.
    """
    if if_match is None:
        return True
    tags = {part.strip() for part in if_match.split(",") if part.strip()}
    return "*" in tags or etag in tags
