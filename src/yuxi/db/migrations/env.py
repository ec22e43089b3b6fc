"""Alembic environment. Run through :mod:`yuxi.db.migrate` (``yuxi db upgrade``), which passes
the database URL in ``config.attributes['url']`` — no settings are read here."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

from yuxi.db.engine import sqlalchemy_url
from yuxi.db.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database URL given to the migration environment")
    engine = create_engine(sqlalchemy_url(url), poolclass=pool.NullPool)
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    raise RuntimeError("offline (SQL script) migrations are not supported")
run_migrations_online()
