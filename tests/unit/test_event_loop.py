"""The long-running commands' event loop: ``YUXI_EVENT_LOOP``, :mod:`yuxi.cli.event_loop`."""

from __future__ import annotations

import asyncio
import builtins
import sys
from typing import Any

import pytest
import uvloop

from yuxi.cli.event_loop import run_on
from yuxi.errors import ConfigurationError
from yuxi.settings import Settings


async def _loop_type() -> type[asyncio.AbstractEventLoop]:
    return type(asyncio.get_running_loop())


def test_uvloop_is_the_default() -> None:
    assert Settings().event_loop == "uvloop"


def test_each_setting_runs_on_its_loop() -> None:
    assert issubclass(run_on("uvloop", _loop_type()), uvloop.Loop)
    ran = run_on("asyncio", _loop_type())
    assert not issubclass(ran, uvloop.Loop) and issubclass(ran, asyncio.BaseEventLoop)


def test_an_unknown_loop_is_refused_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YUXI_EVENT_LOOP", "trio")
    with pytest.raises(ValueError, match="event_loop"):
        Settings()


def test_uvloop_missing_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where uvloop has no build (Windows) the default says what to set, and the command's
    coroutine is closed, never left un-awaited."""
    real_import = builtins.__import__

    def no_uvloop(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "uvloop":
            raise ImportError("no uvloop here")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "uvloop")
    monkeypatch.setattr(builtins, "__import__", no_uvloop)
    main = _loop_type()
    with pytest.raises(ConfigurationError, match="YUXI_EVENT_LOOP=asyncio"):
        run_on("uvloop", main)
    assert main.cr_frame is None  # closed
