"""SQL as the app sends it, for tests that read a statement's text or plan without a server."""

from __future__ import annotations

from sqlalchemy import create_mock_engine

#: The app's dialect (``postgresql+psycopg``), made without a connection.
APP_DIALECT = create_mock_engine("postgresql+psycopg://", lambda *a, **k: None).dialect
