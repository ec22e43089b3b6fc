"""Agent tools: generic workspace file tools and the SubAgent delegation tool."""

from yuxi.agents.tools.delegate import DELEGATE_TOOL_NAME, make_delegate_tool
from yuxi.agents.tools.workspace_tools import (
    SENSITIVE_TOOLS,
    make_read_workspace_tool,
    make_workspace_tools,
)

__all__ = [
    "DELEGATE_TOOL_NAME",
    "SENSITIVE_TOOLS",
    "make_delegate_tool",
    "make_read_workspace_tool",
    "make_workspace_tools",
]
