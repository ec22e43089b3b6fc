"""LangChain's standard test suites for the offline model and for our tools (``langchain-tests``).

The offline model needs no network, so the "integration" suite runs here, in the unit tier.
Capability flags say what the model really does; nothing is skipped any other way:

* tool calling and ``tool_choice``: yes — a forced call that is not one of its commands is
  built from the message and the tool's schema (``NAME(ARGS)`` when written, else the required
  arguments filled from the message), so structured output through forced tool calls works;
* usage metadata: yes, a deterministic count (``_offline_output``); no token details;
* JSON mode, images, audio, video, PDFs, Anthropic-style inputs: no (``supports_*`` False, the
  suite's defaults, left alone);
* model override: yes — the model name is only a label, reported as ``model_name``;
* serialisation: no (not ``is_lc_serializable``); reading settings from the environment: none.

One test is an expected failure, marked the way the suite asks (``xfail`` with a reason, checked
by ``test_no_overrides_DO_NOT_OVERRIDE``): ``test_agent_loop`` wants a tool call for a free-form
question ("What is the weather in San Francisco, CA?") under ``tool_choice="auto"``; the
offline model only calls a tool on "auto" for one of its commands. ``strict=True``: should that
ever change, the test says so.

The tool suites (``ToolsUnitTests``) check each tool's name and input schema against an example
call that carries a :class:`~langchain.tools.ToolRuntime`, as the agent's tool node passes one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from langchain.tools import ToolRuntime
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langchain_tests.integration_tests import ChatModelIntegrationTests
from langchain_tests.unit_tests import ChatModelUnitTests, ToolsUnitTests

from tests.support.agent_fakes import CTX, FakeMemory, SpyWorkspace
from tests.support.run_contexts import forged_context, memory_of
from yuxi.agents.middlewares.memory import make_memory_tools
from yuxi.agents.models import OfflineChatModel
from yuxi.agents.tools import make_workspace_tools

# -- the chat model ------------------------------------------------------------------------------


class _OfflineFlags:
    @property
    def chat_model_class(self) -> type[BaseChatModel]:
        return OfflineChatModel

    @property
    def has_tool_calling(self) -> bool:
        return True

    @property
    def has_tool_choice(self) -> bool:
        return True

    @property
    def has_structured_output(self) -> bool:
        return True

    @property
    def returns_usage_metadata(self) -> bool:
        return True

    @property
    def supports_image_inputs(self) -> bool:
        return False

    @property
    def supports_json_mode(self) -> bool:
        return False

    @property
    def supports_model_override(self) -> bool:
        return True

    @property
    def model_override_value(self) -> str:
        return "yuxi-offline-override"


class TestOfflineChatModelUnit(_OfflineFlags, ChatModelUnitTests):
    @property
    def standard_chat_model_params(self) -> dict[str, Any]:
        # The standard parameters it has. It makes no network call, so it has no timeout,
        # retries or API key and refuses them (test_offline_protocol.py).
        return {"temperature": 0, "max_tokens": 100, "stop": []}


class TestOfflineChatModelIntegration(_OfflineFlags, ChatModelIntegrationTests):
    @pytest.mark.xfail(
        reason="on tool_choice='auto' the offline model calls a tool only for its own commands,"
        " never for a free-form question",
        strict=True,
    )
    @pytest.mark.parametrize("model", [{}, {"output_version": "v1"}], indirect=True)
    def test_agent_loop(self, model: BaseChatModel) -> None:
        super().test_agent_loop(model)


# -- our tools -----------------------------------------------------------------------------------

#: Building the tools reads and writes nothing; the standard unit suite never calls them.
_WORKSPACE = SpyWorkspace(Path("/nonexistent/yuxi-standard-tests"))
_MEMORY = FakeMemory(_WORKSPACE)
_MEMORY_TOOLS = {t.name: t for t in make_memory_tools(_MEMORY, _MEMORY)}
_FILE_TOOLS = {t.name: t for t in make_workspace_tools(memory=_MEMORY, files=_MEMORY)}


def _runtime() -> ToolRuntime[Any, Any]:
    return ToolRuntime(
        state={"messages": []},
        context=forged_context(CTX, _WORKSPACE, memory=memory_of("")),
        config={},
        stream_writer=lambda _chunk: None,
        tool_call_id="call-standard-1",
        store=None,
    )


#: One example call of each tool (its runtime is added per test).
_EXAMPLES: dict[str, dict[str, Any]] = {
    "remember_memory": {"content": "我喜欢乌龙茶", "replaces": "I like green tea"},
    "search_thread_messages": {"query": "oolong", "limit": 5},
    "read_thread_messages": {
        "thread_id": "thread-old",
        "message_id": 7,
        "limit": 20,
        "include_tools": True,
    },
    "list_threads": {"before": "2026-03-01", "limit": 10},
    "read_workspace_file": {"path": "notes/a.md"},
    "write_workspace_file": {"path": "notes/a.md", "content": "你好"},
    "edit_workspace_file": {"path": "notes/a.md", "old": "你好", "new": "再见"},
}


class _OurTool(ToolsUnitTests):
    name: ClassVar[str] = ""

    @property
    def tool_constructor(self) -> BaseTool:
        return {**_MEMORY_TOOLS, **_FILE_TOOLS}[self.name]

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {**_EXAMPLES[self.name], "runtime": _runtime()}


class TestRememberMemoryTool(_OurTool):
    name = "remember_memory"


class TestSearchThreadMessagesTool(_OurTool):
    name = "search_thread_messages"


class TestReadThreadMessagesTool(_OurTool):
    name = "read_thread_messages"


class TestListThreadsTool(_OurTool):
    name = "list_threads"


class TestReadWorkspaceFileTool(_OurTool):
    name = "read_workspace_file"


class TestWriteWorkspaceFileTool(_OurTool):
    name = "write_workspace_file"


class TestEditWorkspaceFileTool(_OurTool):
    name = "edit_workspace_file"


def test_every_tool_of_ours_is_under_the_standard_suite() -> None:
    assert set(_EXAMPLES) == set(_MEMORY_TOOLS) | set(_FILE_TOOLS)
