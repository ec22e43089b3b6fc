"""How the long-running commands run (:mod:`yuxi.cli.process`): their event loop
(``YUXI_EVENT_LOOP``) and their garbage collector."""

from __future__ import annotations

import asyncio
import builtins
import gc
import inspect
import socket
import sys
from typing import Any

import pytest
import uvloop
from typer.testing import CliRunner

from yuxi.cli import app
from yuxi.cli.process import YOUNG_THRESHOLD, run_on, settle_garbage_collector
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
    assert inspect.getcoroutinestate(main) == inspect.CORO_CLOSED


def test_a_settled_process_freezes_what_it_holds_and_collects_its_young_less_often() -> None:
    before = gc.get_threshold()
    held = [[i] for i in range(3)]  # alive (and tracked) now: frozen with the rest
    try:
        settle_garbage_collector()
        assert gc.get_threshold() == (YOUNG_THRESHOLD, before[1], before[2])
        assert before[0] < YOUNG_THRESHOLD
        assert gc.get_freeze_count() > 0
        assert all(gc.is_tracked(o) for o in held)
        in_sight = {id(o) for o in gc.get_objects()}  # the permanent generation is not
        assert not any(id(o) in in_sight for o in held)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


@pytest.mark.parametrize(
    ("command", "module"), [(["serve"], "yuxi.cli.serve"), (["worker"], "yuxi.cli._app")]
)
@pytest.mark.parametrize("kind", ["uvloop", "asyncio"])
def test_the_long_running_commands_run_on_the_configured_loop(
    command: list[str], module: str, kind: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """``yuxi serve`` (and ``yuxi run``, the same path) and ``yuxi worker`` hand their main
    coroutine to :func:`run_on` with ``YUXI_EVENT_LOOP``; nothing starts here (the coroutine
    is closed unrun)."""
    asked: list[str] = []

    def fake_run_on(loop: str, main: Any) -> None:
        asked.append(loop)
        main.close()

    monkeypatch.setattr(f"{module}.run_on", fake_run_on)
    monkeypatch.setenv("YUXI_EVENT_LOOP", kind)
    monkeypatch.setenv("YUXI_DATA_DIR", str(tmp_path))
    with socket.socket() as probe:  # a port nobody listens on, for serve's own check
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    result = CliRunner().invoke(
        app, [*command, *(["--port", port] if command == ["serve"] else [])]
    )
    assert result.exit_code == 0, result.output
    assert asked == [kind]


@pytest.mark.parametrize("command", [["serve"], ["worker"]])
def test_the_long_running_commands_settle_the_collector_once_up_before_any_work(
    command: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """What the process holds once it is up (the container, the app) is frozen before it
    serves or works, and only then: not before the container exists, not after work began."""
    steps: list[str] = []

    class Up:
        embedded = None

        async def aclose(self, **_: Any) -> None:
            steps.append("closed")

    async def bootstrap(*_: Any, **__: Any) -> Up:
        steps.append("up")
        return Up()

    async def serve_app(*_: Any, **__: Any) -> None:
        steps.append("work")

    async def run_workers(*_: Any, **__: Any) -> None:
        steps.append("work")

    def with_container(main: Any, **_: Any) -> None:
        async def up_then_main() -> None:
            await main(await bootstrap())

        asyncio.run(up_then_main())

    monkeypatch.setattr("yuxi.cli.serve.run_on", lambda _loop, main: asyncio.run(main))
    monkeypatch.setattr("yuxi.cli.serve.bootstrap", bootstrap)
    monkeypatch.setattr("yuxi.cli.serve._with_container", with_container)
    monkeypatch.setattr("yuxi.api.server.serve_app", serve_app)
    monkeypatch.setattr("yuxi.bootstrap.run_workers", run_workers)
    monkeypatch.setattr("yuxi.cli.serve.settle_garbage_collector", lambda: steps.append("settle"))
    monkeypatch.setenv("YUXI_DATA_DIR", str(tmp_path))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    result = CliRunner().invoke(
        app, [*command, *(["--port", port] if command == ["serve"] else [])]
    )
    assert result.exit_code == 0, result.output
    assert steps[:3] == ["up", "settle", "work"], steps
