"""Request ids that start with ``resume:`` or ``subagent:`` are the server's (issue 27 §6).

Before this revision a client could submit a chat run with ``request_id`` ``resume:<id of an
interrupted run>``; that run then held the id the server derives for the interruption's one
decision, and every approve or reject was answered by it. The API now refuses such ids
(``yuxi.vocabulary.SERVER_REQUEST_ID_PREFIXES``). This data migration moves any run stored
before that out of the server's namespace, so the interruption it blocked can be decided: a run
whose id has a server prefix but is not what the server derives for it (a ``resume`` run
``resume:<created_by_run_id>``, a ``subagent`` run ``subagent:…``) gets the request id
``client:<its own run id>`` (unique: run ids are). A client retrying the old id is refused by the
API anyway, so nothing relies on it. No schema changes; running it twice changes nothing.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_MOVE = """
UPDATE agent_runs SET request_id = 'client:' || id
WHERE (request_id LIKE 'resume:%' AND NOT (
        run_type = 'resume' AND created_by_run_id IS NOT NULL
        AND request_id = 'resume:' || created_by_run_id))
   OR (request_id LIKE 'subagent:%' AND run_type <> 'subagent')
"""


def upgrade() -> None:
    op.execute(_MOVE)


def downgrade() -> None:
    # The moved ids are not put back: they were the bug.
    pass
