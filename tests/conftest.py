"""Fixtures shared by every tier."""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["tests.support.postgres", "tests.support.server"]

PG_TIERS = ("tests/integration", "tests/e2e", "tests/browser")


def pytest_report_header(config: pytest.Config) -> str:
    url = os.environ.get("YUXI_TEST_DATABASE_URL")
    where = f"external server from YUXI_TEST_DATABASE_URL ({url})" if url else "embedded server"
    return f"yuxi integration PostgreSQL: {where}"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(tier in str(item.path) for tier in PG_TIERS):
            item.add_marker(pytest.mark.pg)
