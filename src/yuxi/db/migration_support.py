"""What several migrations need from the server: an extension's schema (creating the
extension where the server offers it), and whether an index is an invalid leftover of an
interrupted ``CREATE INDEX CONCURRENTLY``.

A migration that builds an optional index calls :func:`ensure_extension` and, on ``None``,
logs and goes on without it: the feature still works, slower (each migration says how).
"""

from __future__ import annotations

import logging

import sqlalchemy as sa

__all__ = ["ensure_extension", "extension_schema", "index_is_invalid"]

_log = logging.getLogger("alembic.runtime.migration")


def extension_schema(bind: sa.Connection, name: str) -> str | None:
    """The schema ``name`` is installed in, or ``None`` when it is not installed."""
    row = bind.execute(
        sa.text(
            "SELECT n.nspname FROM pg_extension e "
            "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = :name"
        ),
        {"name": name},
    ).first()
    return None if row is None else str(row[0])


def ensure_extension(bind: sa.Connection, name: str, *, without: str) -> str | None:
    """The schema of extension ``name``, creating it when the server offers it (in a savepoint:
    a refusal leaves the migration's transaction usable); ``None`` when it cannot be had.
    ``without`` says in the log what the migration then leaves out."""
    schema = extension_schema(bind, name)
    if schema is not None:
        return schema
    available = bind.execute(
        sa.text("SELECT 1 FROM pg_available_extensions WHERE name = :name"), {"name": name}
    ).first()
    if available is None:
        _log.info("%s is not available on this server; %s", name, without)
        return None
    try:
        with bind.begin_nested():
            bind.execute(sa.text(f'CREATE EXTENSION IF NOT EXISTS "{name}"'))
    except sa.exc.DBAPIError as exc:
        _log.warning("cannot create extension %s (%s); %s", name, exc.orig, without)
        return None
    return extension_schema(bind, name)


def index_is_invalid(bind: sa.Connection, name: str) -> bool:
    """Whether index ``name`` exists but is invalid (an interrupted concurrent build)."""
    row = bind.execute(
        sa.text(
            "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = :name AND NOT i.indisvalid"
        ),
        {"name": name},
    ).first()
    return row is not None
