"""Settings, read from the environment (prefix ``YUXI_``) by pydantic-settings.

Nothing here runs at import time: :func:`load_settings` is called by the composition root
(:mod:`yuxi.bootstrap`), and tests build :class:`Settings` directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, TypeAlias
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from yuxi.errors import ConfigurationError
from yuxi.limits import (
    MEMORY_BYTES_PER_RUN,
    MEMORY_WRITES_PER_RUN,
    METRICS_TOKEN_MIN_CHARS,
    MODEL_MAX_RETRIES,
    MODEL_MAX_TOKENS,
    MODEL_TIMEOUT_SECONDS,
    POLL_SECONDS,
    RUN_MODEL_CALL_LIMIT,
    RUN_TIMEOUT_SECONDS,
    RUN_TOOL_CALL_LIMIT,
    TRASH_DAYS,
    TRASH_DAYS_MAX,
)
from yuxi.observability.logs import LogFormat

#: The long-running commands' event loop (:mod:`yuxi.cli.process`).
EventLoop: TypeAlias = Literal["uvloop", "asyncio"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="YUXI_", extra="ignore")

    #: External PostgreSQL (``postgresql://…``). Unset → the embedded server under ``data_dir``.
    database_url: str | None = None
    #: Holds user workspaces (``workspaces/``) and the embedded server's data (``pgdata/``).
    data_dir: Path = Path(".yuxi")
    #: ``provider:model`` for ``init_chat_model``; unset → the deterministic offline model.
    model: str | None = None
    model_base_url: str | None = None
    model_api_key: SecretStr | None = None
    #: Passed to the provider through LangChain on every model call.
    model_max_tokens: int = Field(default=MODEL_MAX_TOKENS, ge=1, le=1_000_000)
    #: Unset → the provider's default.
    model_temperature: float | None = Field(default=None, ge=0, le=2)
    model_timeout_seconds: float = Field(default=MODEL_TIMEOUT_SECONDS, gt=0, le=3600)
    model_max_retries: int = Field(default=MODEL_MAX_RETRIES, ge=0, le=10)
    #: One run's budget: model calls and tool calls (LangChain's limit middleware), wall clock.
    run_model_call_limit: int = Field(default=RUN_MODEL_CALL_LIMIT, ge=1, le=10_000)
    run_tool_call_limit: int = Field(default=RUN_TOOL_CALL_LIMIT, ge=1, le=10_000)
    run_timeout_seconds: float = Field(default=RUN_TIMEOUT_SECONDS, gt=0, le=86_400)

    #: A worker's lease on a claimed run; renewed every ``heartbeat_seconds``.
    lease_seconds: float = Field(default=30.0, gt=0)
    heartbeat_seconds: float = Field(default=10.0, gt=0)
    #: The safety net under LISTEN/NOTIFY: how often an idle worker looks for pending runs and
    #: expired leases by itself, open event streams re-check their tokens and events (one
    #: batched query per process), and the listener pings its connection.
    poll_seconds: float = Field(default=POLL_SECONDS, gt=0, le=3600)
    #: In-process workers started by ``yuxi serve`` (0 = rely on ``yuxi worker`` processes).
    workers: int = Field(default=1, ge=0, le=64)
    #: Runs one worker executes at once, each with its own lease and heartbeat: a run mostly
    #: waits for the model, so slots must outnumber what one process's CPU can keep busy; the
    #: process's CPU, not this number, is meant to be the bound.
    worker_concurrency: int = Field(default=64, ge=1, le=1000)
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    #: The address people open, when it is not ``http://host:port`` (a reverse proxy, a
    #: container listening on 0.0.0.0): login links are printed with it. Scheme and host
    #: (and port) only: the UI calls ``/api/v1`` at the root, so a path prefix cannot work.
    public_url: str | None = None
    #: The most database connections one process's application pool opens (the checkpointer
    #: and the listener have their own); each is kept once opened (``yuxi.db.engine``).
    db_pool_size: int = Field(default=20, ge=1, le=200)
    #: Memory writes (``remember_memory`` results that changed the file) one run may make.
    memory_writes_per_run: int = Field(default=MEMORY_WRITES_PER_RUN, ge=0, le=1000)
    #: UTF-8 bytes of added memory text one run may write.
    memory_bytes_per_run: int = Field(default=MEMORY_BYTES_PER_RUN, ge=0, le=1024 * 1024)
    #: Days a deleted thread stays in the trash, restorable, before the worker pool's purge job
    #: removes it whole (0 = at once: the deletion purges it when no run of it is still live).
    trash_days: int = Field(default=TRASH_DAYS, ge=0, le=TRASH_DAYS_MAX)
    #: ``json``: one JSON object per log line, with the run's ids on a run's lines.
    log_format: LogFormat = "text"
    #: The event loop of ``yuxi serve``, ``yuxi run`` and ``yuxi worker``.
    event_loop: EventLoop = "uvloop"
    #: Unset → ``GET /metrics`` does not exist (404). Set → it answers to this Bearer token.
    metrics_token: SecretStr | None = Field(default=None, min_length=METRICS_TOKEN_MIN_CHARS)

    @field_validator("database_url")
    @classmethod
    def _normalise_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        return value.strip()

    @field_validator("public_url")
    @classmethod
    def _check_public_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// address with a host")
        if parts.path.strip("/") or parts.query or parts.fragment or parts.username:
            raise ValueError(
                "must be scheme, host and port only (the UI is served at the root: no path, "
                "query, fragment or credentials)"
            )
        return f"{parts.scheme}://{parts.netloc}"

    @field_validator("metrics_token", mode="before")
    @classmethod
    def _blank_token_is_unset(cls, value: object) -> object:
        # compose passes an unset variable through as an empty string: that means "off"
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def workspace_root(self) -> Path:
        return self.data_dir.resolve() / "workspaces"

    @property
    def pgdata_dir(self) -> Path:
        return self.data_dir.resolve() / "pgdata"


def load_settings() -> Settings:
    try:
        return Settings()
    except Exception as exc:  # pydantic ValidationError: tell the developer at start-up
        raise ConfigurationError(f"invalid YUXI_* settings: {exc}") from exc
