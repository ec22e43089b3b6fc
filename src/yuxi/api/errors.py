"""Tell the user: every error leaves the API as ``{"error": {"code", "message"}}`` (plus the
error's ``details``, e.g. the ``diff`` of a refused undo).

The one place where :class:`yuxi.errors.YuxiError` codes become HTTP status codes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import InterfaceError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from yuxi.errors import YuxiError

_log = logging.getLogger(__name__)

#: Every ``YuxiError`` code that is not 400. A code missing here falls back to its nearest
#: base class's status (``PreconditionFailed`` would be a ``Conflict``), then to 400.
STATUS_BY_CODE = {
    "invalid_argument": 400,
    "invalid_import": 400,
    "unsupported_import_format": 422,
    "unsupported_media_type": 415,
    "unsafe_path": 400,
    "symlink_refused": 400,
    "not_regular_file": 400,
    "workspace_error": 400,
    "unauthorized": 401,
    "not_found": 404,
    "file_not_found": 404,
    "conflict": 409,
    "active_run_exists": 409,
    "already_decided": 409,
    "precondition_failed": 412,
    "precondition_required": 428,
    "file_too_large": 413,
    "storage_unavailable": 503,
    # The data dir takes no writes now (full / read-only); nothing was changed (design.md).
    "storage_full": 507,
    "storage_read_only": 507,
    "configuration_error": 500,
    # Operator commands (yuxi backup / restore); no route raises them.
    "backup_failed": 500,
    "backup_tool_missing": 500,
    "archive_invalid": 400,
    "archive_unsupported": 422,
    "restore_target_not_empty": 409,
    "model_output_truncated": 502,
    # ToolError codes are told to the model, never sent by a route; should one ever escape a
    # service into a request, it still gets an honest status.
    "tool_error": 400,
    "unauthorized_run": 403,
    "memory_disabled": 409,
    "memory_conflict": 409,
    "memory_too_large": 413,
    "memory_quota_exceeded": 429,
    "memory_read_only": 403,
    "memory_invalid_encoding": 400,
    "memory_write_rejected": 409,
    "forbidden_path": 403,
    "not_text": 400,
    "edit_conflict": 409,
    "subagent_failed": 500,
}


def status_for(exc: YuxiError) -> int:
    """The HTTP status of a Yuxi error: its code's, else its nearest base class's, else 400."""
    for code in (exc.code, *(getattr(cls, "code", None) for cls in type(exc).__mro__)):
        if isinstance(code, str) and code in STATUS_BY_CODE:
            return STATUS_BY_CODE[code]
    return 400


HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    411: "length_required",
    412: "precondition_failed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_argument",
    428: "precondition_required",
}


def error_body(
    code: str, message: str, details: Mapping[str, Any] | None = None
) -> dict[str, dict[str, Any]]:
    return {"error": {"code": code, "message": message, **(details or {})}}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(YuxiError)
    async def _yuxi(_: Request, exc: YuxiError) -> JSONResponse:
        status = status_for(exc)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        return JSONResponse(
            error_body(exc.code, exc.message, exc.details), status_code=status, headers=headers
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors()[:5]:
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
        return JSONResponse(
            error_body("invalid_argument", "; ".join(parts) or "invalid request"), status_code=422
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = HTTP_CODES.get(exc.status_code, "error")
        return JSONResponse(
            error_body(code, str(exc.detail)), status_code=exc.status_code, headers=exc.headers
        )

    @app.exception_handler(OperationalError)
    @app.exception_handler(InterfaceError)
    async def _database(_: Request, exc: Exception) -> JSONResponse:
        _log.warning("database unavailable: %r", exc)
        return JSONResponse(
            error_body("storage_unavailable", "the database is unavailable; try again later"),
            status_code=503,
        )

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        _log.exception("unhandled error")
        return JSONResponse(error_body("internal_error", "internal server error"), status_code=500)
