"""Schemathesis against the live server's own /openapi.json: no input gives a 5xx.

Positive and negative generation for every operation, authenticated as a real user (so the
handlers run, not just the 401 path), plus an unauthenticated pass.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.core.result import Ok
from schemathesis.generation import GenerationMode

from tests.support.server import LiveServer, create_user_with_token
from yuxi.bootstrap import Container

EXAMPLES_PER_OPERATION = 12


def _fuzz(base_url: str, token: str) -> tuple[int, list[str]]:
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    failures: list[str] = []
    calls = 0
    for result in schema.get_all_operations():
        assert isinstance(result, Ok)
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            strategy = operation.as_strategy(generation_mode=mode)

            @settings(
                max_examples=EXAMPLES_PER_OPERATION,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(case=strategy, auth=st.booleans())
            def check(case: Any, auth: bool) -> None:
                nonlocal calls
                headers = {"Authorization": f"Bearer {token}"} if auth else {}
                response = case.call(base_url=base_url, headers=headers, timeout=30)
                calls += 1
                if response.status_code >= 500:
                    failures.append(
                        f"{case.method} {case.formatted_path} -> {response.status_code}: "
                        f"{response.text[:200]}"
                    )

            # an operation without parameters has no negative inputs at all
            with contextlib.suppress(Unsatisfiable):
                check()
    return calls, failures


async def test_no_input_gives_a_server_error(live_server: LiveServer, container: Container) -> None:
    _, token = await create_user_with_token(container, "fuzz")
    calls, failures = await asyncio.to_thread(_fuzz, live_server.base_url, token)
    assert calls > 100
    assert failures == []
