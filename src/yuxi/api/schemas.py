"""Request and response bodies. Requests refuse unknown fields (``extra="forbid"``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from yuxi.limits import (
    CREDENTIAL_MAX_CHARS,
    REQUEST_ID_MAX_CHARS,
    RUN_INPUT_MAX_BYTES,
    TITLE_MAX_CHARS,
    USER_NAME_MAX_CHARS,
)
from yuxi.services.chat.views import RunSummary, ThreadSummary
from yuxi.utils.string_utils import is_valid_text


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ConfigBody(Strict):
    enable_memory: bool = Field(strict=True)


class ConfigView(BaseModel):
    enable_memory: bool


class MeView(BaseModel):
    uid: str
    name: str


class AccountDeleteBody(Strict):
    """``DELETE /me``: the account's name, typed again, so no stray request deletes it."""

    confirm: str = Field(strict=True, max_length=USER_NAME_MAX_CHARS)


class SessionCreate(Strict):
    """``POST /session``: a login code (from a login link) to exchange for a session token."""

    login_code: str = Field(min_length=1, max_length=CREDENTIAL_MAX_CHARS)


class SessionView(BaseModel):
    """A browser session token (shown once) and when it expires."""

    token: str
    expires_at: datetime
    uid: str


def _text_only(value: str) -> str:
    if not is_valid_text(value):
        raise ValueError("must be valid Unicode text without NUL characters")
    return value


#: A string that can be stored: no NUL (PostgreSQL text cannot hold it), no lone surrogate.
Text = Annotated[str, AfterValidator(_text_only)]


class ThreadCreate(Strict):
    title: Text = Field(default="", max_length=TITLE_MAX_CHARS)


class ThreadPatch(Strict):
    """``PATCH /threads/{id}``: the types only; the chat service checks the title's rule."""

    title: str | None = None
    recall_excluded: bool | None = Field(default=None, strict=True)


class ThreadList(BaseModel):
    threads: list[ThreadSummary]


class RunCreate(Strict):
    # The size rule is the service's alone (UTF-8 bytes, one message for every caller); the body
    # itself is bounded before it is read (yuxi.api.bodies).
    input: str = Field(
        min_length=1, description=f"the user's message, at most {RUN_INPUT_MAX_BYTES} UTF-8 bytes"
    )
    request_id: str | None = Field(default=None, min_length=1, max_length=REQUEST_ID_MAX_CHARS)


class ResumeBody(Strict):
    decision: Literal["approve", "reject"]


class RunList(BaseModel):
    runs: list[RunSummary]


class FileEntryView(BaseModel):
    path: str
    size: int
    is_dir: bool
    mtime: float


class FileList(BaseModel):
    files: list[FileEntryView]
