"""Two more kinds of memory version: ``forget`` (the entries a deleted thread wrote, removed
with it) and ``import`` (a file the user brought in). The kind check is replaced by one that
allows them; every earlier kind stays allowed, so no stored row changes.

Running it twice changes nothing: the constraint is dropped if present and created anew.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_CONSTRAINT = "ck_memory_versions_kind"
_BEFORE = ("add", "replace", "edit", "delete", "restore", "undo", "recovered")
_AFTER = (*_BEFORE, "forget", "import")


def _replace_check(kinds: tuple[str, ...]) -> None:
    allowed = ", ".join(f"'{kind}'" for kind in kinds)
    op.execute(f"ALTER TABLE memory_versions DROP CONSTRAINT IF EXISTS {_CONSTRAINT}")
    op.execute(
        f"ALTER TABLE memory_versions ADD CONSTRAINT {_CONSTRAINT} CHECK (kind IN ({allowed}))"
    )


def upgrade() -> None:
    _replace_check(_AFTER)


def downgrade() -> None:
    # Fails while rows of the new kinds exist: stored versions are never rewritten to fit.
    _replace_check(_BEFORE)
