"""The bind parameters the history statements are built with, and :data:`Statement`.

The statements the history tools run are built once per shape (``functools.cache``) with these
parameters, and executed with a dict of values. SQLAlchemy keys its compiled-SQL cache on a
traversal of the statement, memoized per statement object: building and keying these nested
statements anew on every call cost ~18 ms of Python per search at 10M rows, more than the
database's own time (B4).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Integer, Select, String, Text, bindparam

__all__ = [
    "ANCHOR",
    "CONVERSATION",
    "KEY_PATTERN",
    "LIMIT",
    "PATTERN",
    "QUERY",
    "RUN",
    "SNIPPET_CHARS",
    "THREAD",
    "UID",
    "WINDOW",
    "WINDOW_AND_ONE",
    "Statement",
]

UID = bindparam("uid", type_=String())
QUERY = bindparam("query", type_=Text())
PATTERN = bindparam("pattern", type_=Text())
KEY_PATTERN = bindparam("key_pattern", type_=Text())
LIMIT = bindparam("limit", type_=Integer())
WINDOW = bindparam("window", type_=Integer())
WINDOW_AND_ONE = bindparam("window_and_one", type_=Integer())
RUN = bindparam("run_id", type_=String())
SNIPPET_CHARS = bindparam("snippet_chars", type_=Integer())
THREAD = bindparam("thread_id", type_=String())
CONVERSATION = bindparam("conversation_id", type_=BigInteger())
ANCHOR = bindparam("anchor_id", type_=BigInteger())

#: A prebuilt statement and the values of its parameters.
Statement = tuple[Select[*tuple[Any, ...]], dict[str, Any]]
