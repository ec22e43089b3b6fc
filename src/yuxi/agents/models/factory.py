"""Chat model selection: any LangChain chat model by configuration, else the offline model."""

from __future__ import annotations

from typing import Any

from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel

from yuxi.agents.models.offline import OfflineChatModel
from yuxi.agents.models.openai_passthrough import PassthroughChatOpenAI
from yuxi.settings import Settings

__all__ = ["build_chat_model"]

_STREAM_USAGE_PROVIDERS = ("openai", "azure_openai")


def build_chat_model(settings: Settings) -> BaseChatModel:
    """``settings.model`` unset → :class:`OfflineChatModel`; ``openai:<model>`` →
    :class:`PassthroughChatOpenAI` (``ChatOpenAI``, same wire bytes); else ``init_chat_model``.

    ``settings.model`` is ``provider:model`` (for example ``openai:gpt-4o-mini``);
    ``model_base_url`` (an OpenAI-compatible endpoint) and ``model_api_key`` are passed only
    when set, so a provider's own environment variables keep working otherwise. Every model
    gets ``max_tokens``, ``timeout`` and ``max_retries`` (and ``temperature`` when set) from
    the settings; a provider that refuses one fails at start-up, not mid-run.
    """
    name = (settings.model or "").strip()
    if not name:
        return OfflineChatModel()
    kwargs: dict[str, Any] = {
        "max_tokens": settings.model_max_tokens,
        "timeout": settings.model_timeout_seconds,
        "max_retries": settings.model_max_retries,
    }
    if settings.model_temperature is not None:
        kwargs["temperature"] = settings.model_temperature
    if name.split(":", 1)[0] in _STREAM_USAGE_PROVIDERS:
        # Token usage in streamed responses too (OpenAI sends it only when asked).
        kwargs["stream_usage"] = True
    if settings.model_base_url:
        kwargs["base_url"] = settings.model_base_url
    if settings.model_api_key is not None:
        kwargs["api_key"] = settings.model_api_key.get_secret_value()
    provider, _, model_name = name.partition(":")
    if provider == "openai" and model_name:
        # The same ChatOpenAI, minus the SDK's per-message request walk (see the module).
        return PassthroughChatOpenAI(model=model_name, **kwargs)
    model: BaseChatModel = init_chat_model(name, **kwargs)
    return model
