"""Agent graphs built with LangChain v1 ``create_agent``."""

from yuxi.agents.graphs.chatbot import AgentGraph, build_chatbot_graph
from yuxi.agents.graphs.subagent import build_subagent_graph

__all__ = ["AgentGraph", "build_chatbot_graph", "build_subagent_graph"]
