"""Credentials never reach the access log.

Yuxi itself never reads a credential from a URL, but a client may still put one there (an old
``/?token=…`` link, a login link's ``?login=…`` code, a script's ``?api_key=…``). uvicorn's
access log prints each request line with its query string; :class:`RedactCredentialsFilter`
rewrites it first:

* the value of every query parameter whose name looks like a credential
  (:data:`CREDENTIAL_PARAMS`, or a name ending in one of :data:`CREDENTIAL_NAME_SUFFIXES`,
  compared case-insensitively after percent-decoding) becomes ``REDACTED``;
* anything shaped like a Yuxi token or login code (``yx_`` / ``yl_`` + URL-safe characters) is
  ``REDACTED`` wherever it appears in the line, whatever the parameter is called.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote_plus

from yuxi.vocabulary import LOGIN_CODE_PREFIX, TOKEN_PREFIX

REDACTED = "REDACTED"
ACCESS_LOGGER = "uvicorn.access"

CREDENTIAL_PARAMS = frozenset(
    {"token", "login", "code", "access_token", "key", "api_key", "apikey", "password", "secret"}
)
CREDENTIAL_NAME_SUFFIXES = ("token", "_key", "secret", "password", "passwd")

_YUXI_CREDENTIAL = re.compile(
    "(?:" + "|".join(re.escape(p) for p in (TOKEN_PREFIX, LOGIN_CODE_PREFIX)) + r")"
    r"(?:[A-Za-z0-9_\-]|%[0-9A-Fa-f]{2})+",
    re.IGNORECASE,
)
_QUERY_PARAM = re.compile(r"(?P<name>[^&;=#\s\"]*)(?P<eq>=)(?P<value>[^&;#\s\"]*)")


def _is_credential_name(raw: str) -> bool:
    name = unquote_plus(raw).strip().lower()
    return name in CREDENTIAL_PARAMS or name.endswith(CREDENTIAL_NAME_SUFFIXES)


def _redact_query(query: str) -> str:
    def one(match: re.Match[str]) -> str:
        if match.group("value") and _is_credential_name(match.group("name")):
            return f"{match.group('name')}={REDACTED}"
        return match.group(0)

    return _QUERY_PARAM.sub(one, query)


def redact_credentials(text: str) -> str:
    """``text`` (a request path or a whole log line) with credential values replaced."""
    path, sep, query = text.partition("?")
    if sep:
        text = path + sep + _redact_query(query)
    return _YUXI_CREDENTIAL.sub(REDACTED, text)


class RedactCredentialsFilter(logging.Filter):
    """Rewrites an access-log record's arguments (uvicorn logs the path with its query string
    as one of them) and message; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact_credentials(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(
                redact_credentials(a) if isinstance(a, str) else a for a in record.args
            )
        elif isinstance(record.args, dict):
            record.args = {
                k: redact_credentials(v) if isinstance(v, str) else v
                for k, v in record.args.items()
            }
        return True


def install_access_log_redaction(logger_name: str = ACCESS_LOGGER) -> None:
    """Add the filter to the access logger once (idempotent)."""
    logger = logging.getLogger(logger_name)
    if not any(isinstance(f, RedactCredentialsFilter) for f in logger.filters):
        logger.addFilter(RedactCredentialsFilter())
