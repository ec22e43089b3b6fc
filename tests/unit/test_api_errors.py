"""Every deliberate error has an HTTP status, decided in one place (``yuxi.api.errors``)."""

from __future__ import annotations

import pytest

from yuxi import errors
from yuxi.api.errors import STATUS_BY_CODE, error_body, status_for


def _all_error_classes() -> list[type[errors.YuxiError]]:
    found: list[type[errors.YuxiError]] = []
    pending: list[type[errors.YuxiError]] = [errors.YuxiError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def test_every_error_code_has_a_status() -> None:
    for cls in _all_error_classes():
        if cls is errors.YuxiError:
            continue
        assert cls.code in STATUS_BY_CODE, cls.__name__
        assert 400 <= status_for(cls("x")) < 600


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (errors.PreconditionFailed, 412),
        (errors.PreconditionRequired, 428),
        (errors.MemoryConflict, 409),
        (errors.MemoryQuotaExceeded, 429),
        (errors.ActiveRunExists, 409),
        (errors.Unauthorized, 401),
        (errors.WorkspaceFileNotFound, 404),
        (errors.FileTooLarge, 413),
        (errors.StorageUnavailable, 503),
        (errors.UnauthorizedRun, 403),
        (errors.MemoryTooLarge, 413),
        (errors.EditConflict, 409),
        (errors.NotText, 400),
    ],
)
def test_status_of(error: type[errors.YuxiError], status: int) -> None:
    assert status_for(error("x")) == status


def test_an_unlisted_subclass_gets_its_base_class_status() -> None:
    class Stale(errors.PreconditionFailed):
        code = "some_new_code"

    assert status_for(Stale("x")) == 412
    assert status_for(errors.YuxiError("x")) == 400


def test_an_errors_details_join_its_code_and_message_in_the_body() -> None:
    exc = errors.MemoryConflict("changed since", details={"diff": "-a\n+b\n"})
    assert error_body(exc.code, exc.message, exc.details) == {
        "error": {"code": "memory_conflict", "message": "changed since", "diff": "-a\n+b\n"}
    }
    assert error_body("not_found", "gone") == {"error": {"code": "not_found", "message": "gone"}}
