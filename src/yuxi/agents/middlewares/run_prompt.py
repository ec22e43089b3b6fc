"""The run's system prompt, set on every model call from the run context.

A compiled graph is shared by every run of its configuration, so it is compiled without a system
prompt: this middleware, the outermost of a graph's model-call wrappers, makes the run's own
prompt (``RunContext.system_prompt``: the base prompt plus the user's AGENTS.md and USER.md) the
system message of each model call, followed by the graph's fixed ``note`` (the chatbot without
memory says so). Wrappers inside it (the memory middleware) append to that message. A call
without a run context is refused (fail closed): no model call runs with another run's prompt or
with none.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage, SystemMessage

from yuxi.agents.context import RunContext
from yuxi.errors import UnauthorizedRun

__all__ = ["RunPromptMiddleware"]


class RunPromptMiddleware(AgentMiddleware[AgentState[Any], RunContext, Any]):
    """Sets the system message of every model call to the run's prompt (plus ``note``)."""

    def __init__(self, *, note: str | None = None) -> None:
        super().__init__()
        self.note = note

    def prompt(self, context: object) -> str:
        if not isinstance(context, RunContext):
            raise UnauthorizedRun("this model call has no run context")
        prompt = context.system_prompt
        if self.note:
            prompt = f"{prompt}\n\n{self.note}" if prompt else self.note
        return prompt

    def _with_prompt(self, request: ModelRequest[RunContext]) -> ModelRequest[RunContext]:
        prompt = self.prompt(request.runtime.context)
        return request.override(system_message=SystemMessage(content=prompt) if prompt else None)

    def wrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        return handler(self._with_prompt(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        return await handler(self._with_prompt(request))
