"""Chat models: configured providers and the deterministic offline model."""

from yuxi.agents.models._offline_answers import REJECTED_WRITE_REPLY, describe_result
from yuxi.agents.models.factory import build_chat_model
from yuxi.agents.models.offline import OfflineChatModel

__all__ = ["REJECTED_WRITE_REPLY", "OfflineChatModel", "build_chat_model", "describe_result"]
