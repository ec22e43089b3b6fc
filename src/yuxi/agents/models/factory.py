"""Chat model selection: any LangChain chat model by configuration, else the offline model."""

from __future__ import annotations

from typing import Any

from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel

from yuxi.agents.models.offline import OfflineChatModel
from yuxi.settings import Settings

__all__ = ["build_chat_model"]


def build_chat_model(settings: Settings) -> BaseChatModel:
    """``settings.model`` unset → :class:`OfflineChatModel`; else ``init_chat_model``.

    ``settings.model`` is ``provider:model`` (for example ``openai:gpt-4o-mini``);
    ``model_base_url`` (an OpenAI-compatible endpoint) and ``model_api_key`` are passed only
    when set, so a provider's own environment variables keep working otherwise.
    """
    name = (settings.model or "").strip()
    if not name:
        return OfflineChatModel()
    kwargs: dict[str, Any] = {}
    if settings.model_base_url:
        kwargs["base_url"] = settings.model_base_url
    if settings.model_api_key is not None:
        kwargs["api_key"] = settings.model_api_key.get_secret_value()
    model: BaseChatModel = init_chat_model(name, **kwargs)
    return model
