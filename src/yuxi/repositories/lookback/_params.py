"""The bind parameters the history statements are built with, and :data:`Statement`.

The statements the history tools run are built once per shape (``functools.cache``) with these
parameters, and executed with a dict of values. SQLAlchemy keys its compiled-SQL cache on a
traversal of the statement, memoized per statement object: building and keying these nested
statements anew on every call would cost more Python time than the database spends on them
(docs/performance.md).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Boolean, Integer, Select, String, TextClause, bindparam, text

__all__ = [
    "ANCHOR",
    "CONVERSATION",
    "LIMIT",
    "OWNER_VIEW",
    "PLAN_WITH_PARAMETERS",
    "RUN",
    "THREAD",
    "UID",
    "WINDOW",
    "Statement",
]

UID = bindparam("uid", type_=String())
LIMIT = bindparam("limit", type_=Integer())
WINDOW = bindparam("window", type_=Integer())
RUN = bindparam("run_id", type_=String())
THREAD = bindparam("thread_id", type_=String())
CONVERSATION = bindparam("conversation_id", type_=BigInteger())
ANCHOR = bindparam("anchor_id", type_=BigInteger())
#: The owner's own search (the UI's search box) also sees threads hidden from recall; the
#: model's never does. A parameter, not a second statement shape: with the history statements
#: planned for their values (below) the planner drops the branch that does not apply.
OWNER_VIEW = bindparam("owner_view", False, type_=Boolean())

#: A prebuilt statement and the values of its parameters.
Statement = tuple[Select[*tuple[Any, ...]], dict[str, Any]]

#: Run first in every history tool's transaction. psycopg prepares a statement after 5 runs and
#: PostgreSQL may then keep a *generic* plan, made without the parameters: for these statements
#: (one user's rows, terms common or rare for that user, filters given or not) such a plan reads
#: far more than the plan made for the actual values (figures: docs/performance.md). Only
#: for the history statements: the rest of the app keeps generic plans, which spare the write
#: path's statements their planning time.
PLAN_WITH_PARAMETERS: TextClause = text("SET LOCAL plan_cache_mode = force_custom_plan")
