"""One code per way a run can end badly, and messages that never repeat the provider's text."""

from __future__ import annotations

import pytest
from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain.agents.middleware.tool_call_limit import ToolCallLimitExceededError
from langgraph.errors import GraphRecursionError

from yuxi.errors import MemoryDisabled
from yuxi.runtime.run_failures import classify_failure

SECRET = "sk-PROVIDER-TEXT-MARKER"


class _ProviderError(Exception):
    def __init__(self, status: int | None) -> None:
        super().__init__(f"upstream said {SECRET}")
        self.status_code = status


class RateLimitError(Exception):
    pass


class APITimeoutError(Exception):
    pass


class APIConnectionError(Exception):
    pass


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (ModelCallLimitExceededError(3, 3, None, 3), "run_limit_exceeded"),
        (ToolCallLimitExceededError(3, 3, None, 2), "run_limit_exceeded"),
        (GraphRecursionError("too deep"), "run_step_limit"),
        (MemoryDisabled("memory is off"), "memory_disabled"),
        (_ProviderError(429), "model_rate_limited"),
        (RateLimitError(SECRET), "model_rate_limited"),
        (TimeoutError(SECRET), "model_timeout"),
        (APITimeoutError(SECRET), "model_timeout"),
        (_ProviderError(503), "model_unavailable"),
        (APIConnectionError(SECRET), "model_unavailable"),
        (_ProviderError(401), "model_request_refused"),
        (_ProviderError(None), "run_error"),
        (RuntimeError(SECRET), "run_error"),
    ],
)
def test_each_failure_has_its_code_and_a_message_without_provider_text(
    exc: BaseException, code: str
) -> None:
    failure = classify_failure(exc)
    assert failure.code == code
    assert SECRET not in failure.message
    assert failure.expected is (code != "run_error")
