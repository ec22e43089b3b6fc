"""Request bodies are bounded before anything reads them.

Starlette buffers a body whole when a route asks for it, and FastAPI asks for a route's JSON
body before it checks credentials: without a bound, anyone who can reach the port makes the
process hold several times what they send (measured: a 300 MiB body, 1.26 GiB of RSS, then
401). So every request body is refused past :data:`~yuxi.limits.REQUEST_BODY_MAX_BYTES` with
413 ``payload_too_large`` in the API's error shape:

* a declared ``Content-Length`` over the bound: at once, nothing read;
* a body without one (chunked) that grows past it: as the route reads, when the bound is
  crossed, so no more than the bound is ever buffered.

Two routes take larger raw bodies after checking who is asking: ``PUT
/api/v1/workspace/files/…`` and ``POST /api/v1/memory/import``. They stream them through
:func:`read_bounded_body` under their own bounds and errors (``file_too_large``), so the
middleware leaves them alone. FastAPI's own ``max_body_size`` does the same counting but answers
413 in plain text, outside the API's error shape; hence this middleware.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Request
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from yuxi.api.errors import error_body
from yuxi.errors import YuxiError
from yuxi.limits import REQUEST_BODY_MAX_BYTES

__all__ = ["SELF_BOUNDED", "BodyLimitMiddleware", "read_bounded_body"]

#: (method, path prefix) of the routes that bound their own bodies (read_bounded_body).
SELF_BOUNDED = (("PUT", "/api/v1/workspace/files/"), ("POST", "/api/v1/memory/import"))

_MESSAGE = f"request bodies may be at most {REQUEST_BODY_MAX_BYTES} bytes; nothing was read past it"


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_bytes: int = REQUEST_BODY_MAX_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _self_bounded(scope):
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            response = JSONResponse(error_body("payload_too_large", _MESSAGE), status_code=413)
            await response(scope, receive, send)
            return
        seen = 0

        async def bounded_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    # FastAPI passes an HTTPException through its body reading unchanged; the
                    # app's one error mapping (yuxi.api.errors) answers it.
                    raise HTTPException(413, _MESSAGE)
            return message

        await self.app(scope, bounded_receive, send)


async def read_bounded_body(
    request: Request, limit: int, too_large: Callable[[], YuxiError]
) -> bytes:
    """The body of a self-bounded route, refused with ``too_large()`` as soon as it passes
    ``limit`` bytes (never buffered beyond it)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large()
        chunks.append(chunk)
    return b"".join(chunks)


def _self_bounded(scope: Scope) -> bool:
    method, path = scope.get("method", ""), scope.get("path", "")
    return any(method == m and path.startswith(p) for m, p in SELF_BOUNDED)


def _content_length(scope: Scope) -> int | None:
    """The declared length; one that is not a number is left to the HTTP server to refuse."""
    value = Headers(scope=scope).get("content-length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
