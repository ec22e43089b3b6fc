"""Agent graphs built with LangChain v1 ``create_agent``."""

from yuxi.agents.graphs.chatbot import AgentGraph, compile_chatbot_graph
from yuxi.agents.graphs.subagent import compile_subagent_graph

__all__ = ["AgentGraph", "compile_chatbot_graph", "compile_subagent_graph"]
