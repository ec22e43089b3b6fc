"""The access log never shows a credential from a URL (issue 10 §4): the redaction rule and the
filter on a record shaped exactly like uvicorn's access records."""

from __future__ import annotations

import logging

import pytest
from uvicorn.logging import AccessFormatter

from yuxi.api.access_log import (
    ACCESS_LOGGER,
    REDACTED,
    RedactCredentialsFilter,
    install_access_log_redaction,
    redact_credentials,
)

MARK = "SECRETMARK"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (f"/?token=yx_{MARK}abcdefghijklmnop", f"/?token={REDACTED}"),
        (f"/?login=yl_{MARK}abcdefghijklmnop", f"/?login={REDACTED}"),
        (f"/?TOKEN={MARK}", f"/?TOKEN={REDACTED}"),
        (f"/x?a=1&api_key={MARK}&b=2", f"/x?a=1&api_key={REDACTED}&b=2"),
        (f"/x?Password={MARK}", f"/x?Password={REDACTED}"),
        (f"/x?code={MARK}#frag", f"/x?code={REDACTED}#frag"),
        (f"/x?secret={MARK};key={MARK}", f"/x?secret={REDACTED};key={REDACTED}"),
        (f"/x?access_token={MARK}", f"/x?access_token={REDACTED}"),
        (
            f"/x?refresh_token={MARK}&client_secret={MARK}",
            f"/x?refresh_token={REDACTED}&client_secret={REDACTED}",
        ),
        (f"/x?%74oken={MARK}", f"/x?%74oken={REDACTED}"),  # a percent-encoded name
        (f"/x?to+ken={MARK}", f"/x?to+ken={MARK}"),  # not a credential name
        # shaped like a Yuxi credential: redacted whatever the parameter or place
        (f"/x?t=yx_{MARK}abcdefgh", f"/x?t={REDACTED}"),
        (f"/x?yl_{MARK}abcdefgh", f"/x?{REDACTED}"),
        (f"/files/yx_{MARK}-abc", f"/files/{REDACTED}"),
        (f"/x?q=YX_{MARK}", f"/x?q={REDACTED}"),
        (f"/x?q=yx_{MARK}%2Dpart", f"/x?q={REDACTED}"),
        # nothing to hide: unchanged
        ("/api/v1/runs/r1/events?after=3", "/api/v1/runs/r1/events?after=3"),
        ("/?token=", "/?token="),
        ("/monkey?keyboard=1&monkey=2", "/monkey?keyboard=1&monkey=2"),
        ("/plain/path", "/plain/path"),
    ],
)
def test_redact_credentials(path: str, expected: str) -> None:
    assert redact_credentials(path) == expected


def _uvicorn_access_record(full_path: str) -> logging.LogRecord:
    """What ``uvicorn.protocols.http`` logs for every response."""
    return logging.LogRecord(
        ACCESS_LOGGER,
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", full_path, "1.1", 200),
        None,
    )


def test_the_filter_rewrites_uvicorns_access_record_and_keeps_it() -> None:
    record = _uvicorn_access_record(f"/?token=yx_{MARK}abcdefghijk&login=yl_{MARK}xyz")
    assert RedactCredentialsFilter().filter(record) is True
    line = AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s').format(record)
    assert MARK not in line
    assert line == f'127.0.0.1:5000 - "GET /?token={REDACTED}&login={REDACTED} HTTP/1.1" 200 OK'


def test_the_filter_rewrites_a_preformatted_message_and_dict_args() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, f"GET /?key={MARK}", None, None)
    RedactCredentialsFilter().filter(record)
    assert record.getMessage() == f"GET /?key={REDACTED}"
    record = logging.LogRecord(
        "x", logging.INFO, __file__, 1, "%(p)s", ({"p": f"/?code={MARK}"},), None
    )
    RedactCredentialsFilter().filter(record)
    assert record.getMessage() == f"/?code={REDACTED}"


def test_install_is_idempotent_and_hides_the_marker_end_to_end(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger(ACCESS_LOGGER)
    before = list(logger.filters)
    try:
        install_access_log_redaction()
        install_access_log_redaction()
        assert sum(isinstance(f, RedactCredentialsFilter) for f in logger.filters) == 1
        with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
            logger.info(
                '%s - "%s %s HTTP/%s" %d', "c", "GET", f"/?token=yx_{MARK}abcdefgh", "1.1", 200
            )
        assert MARK not in caplog.text and f"/?token={REDACTED}" in caplog.text
    finally:
        logger.filters[:] = before
