"""Fixtures shared by every tier."""

from __future__ import annotations

import os

import pytest


def pytest_report_header(config: pytest.Config) -> str:
    url = os.environ.get("YUXI_TEST_DATABASE_URL")
    where = f"external server from YUXI_TEST_DATABASE_URL ({url})" if url else "embedded server"
    return f"yuxi integration PostgreSQL: {where}"
