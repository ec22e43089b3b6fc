"""Login codes and token expiry (issue 10 §4: no long-lived credential in a URL).

* ``api_tokens.expires_at``: a token may carry an expiry (NULL: none); browser sessions do;
* ``login_codes``: short-lived, single-use codes a login link carries; the UI exchanges one
  (``POST /api/v1/session``) for a session token. Stored as sha256 digests, like tokens;
* the never-expiring demo tokens earlier ``yuxi run`` starts minted (one per start, label
  ``make run``, printed in login URLs and so in terminals and access logs) are revoked.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("api_tokens", sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "login_codes",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["uid"], ["users.uid"], name=op.f("fk_login_codes_uid_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_codes")),
        sa.UniqueConstraint("code_hash", name=op.f("uq_login_codes_code_hash")),
    )
    op.create_index(op.f("ix_login_codes_uid"), "login_codes", ["uid"], unique=False)
    op.execute(
        "UPDATE api_tokens SET revoked_at = now() "
        "WHERE uid = 'demo' AND label = 'make run' AND revoked_at IS NULL"
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_login_codes_uid"), table_name="login_codes")
    op.drop_table("login_codes")
    op.drop_column("api_tokens", "expires_at")
