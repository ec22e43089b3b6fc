"""Why a run failed, told to its owner: one stable code and a message that leaks nothing.

An exception that ends a run is classified here, once: the run's own limits (LangChain's
model- and tool-call limit middleware, the graph step limit), a Yuxi error (its own code), and
the model provider's failures — rate limiting, timeouts, server errors, refused requests — by
the HTTP status and exception type the provider SDKs use, without importing any SDK. The message
never carries the provider's own text (it can include request ids, URLs, parts of the prompt);
the full exception goes to the server log instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain.agents.middleware.tool_call_limit import ToolCallLimitExceededError
from langgraph.errors import GraphRecursionError

from yuxi.errors import YuxiError
from yuxi.limits import RUN_MAX_STEPS
from yuxi.vocabulary import (
    MODEL_RATE_LIMITED,
    MODEL_REQUEST_REFUSED,
    MODEL_TIMEOUT,
    MODEL_UNAVAILABLE,
    RUN_ERROR,
    RUN_LIMIT_EXCEEDED,
    RUN_STEP_LIMIT,
)

__all__ = ["RunFailure", "classify_failure"]


@dataclass(frozen=True)
class RunFailure:
    code: str
    message: str
    #: Expected in normal operation (a limit, a provider hiccup): logged without a traceback.
    expected: bool = True


def _status_code(exc: BaseException) -> int | None:
    for candidate in (exc, getattr(exc, "response", None)):
        status = getattr(candidate, "status_code", None)
        if isinstance(status, int):
            return status
    return None


def _named(exc: BaseException, *fragments: str) -> bool:
    names = [cls.__name__ for cls in type(exc).__mro__]
    return any(fragment in name for name in names for fragment in fragments)


def classify_failure(exc: BaseException) -> RunFailure:
    """The code and owner-facing message of the exception that ended a run."""
    if isinstance(exc, ModelCallLimitExceededError):
        return RunFailure(RUN_LIMIT_EXCEEDED, "the run reached its limit of model calls")
    if isinstance(exc, ToolCallLimitExceededError):
        return RunFailure(RUN_LIMIT_EXCEEDED, "the run reached its limit of tool calls")
    if isinstance(exc, GraphRecursionError):
        return RunFailure(RUN_STEP_LIMIT, f"the run took more than {RUN_MAX_STEPS} steps")
    if isinstance(exc, YuxiError):
        return RunFailure(exc.code, exc.message)
    status = _status_code(exc)
    if status == 429 or _named(exc, "RateLimit"):
        return RunFailure(
            MODEL_RATE_LIMITED, "the model provider is rate-limiting requests; try again later"
        )
    if isinstance(exc, TimeoutError) or _named(exc, "Timeout"):
        return RunFailure(MODEL_TIMEOUT, "the model provider did not answer in time")
    if (status is not None and status >= 500) or _named(exc, "APIConnectionError", "Connect"):
        return RunFailure(MODEL_UNAVAILABLE, "the model provider is unavailable; try again later")
    if status is not None and 400 <= status < 500:
        return RunFailure(
            MODEL_REQUEST_REFUSED, f"the model provider refused the request (HTTP {status})"
        )
    return RunFailure(
        RUN_ERROR, f"the run failed unexpectedly ({type(exc).__name__})", expected=False
    )
