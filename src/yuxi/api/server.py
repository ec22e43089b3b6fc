"""Serving the app with uvicorn: the signal handling and log set-up ``yuxi serve`` and
``yuxi run`` share."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator

import uvicorn

from yuxi.api.access_log import install_access_log_redaction
from yuxi.api.app import create_app
from yuxi.bootstrap import Container


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn's own handlers re-raise SIGTERM/SIGINT once it has shut down, which kills
        # the process before the caller's clean-up (stopping the embedded PostgreSQL) runs.
        # Ours only ask uvicorn to exit (a second Ctrl-C forces it); clean-up then runs.
        loop = asyncio.get_running_loop()
        signals = (signal.SIGINT, signal.SIGTERM)
        for sig in signals:
            loop.add_signal_handler(sig, self.handle_exit, sig, None)
        try:
            yield
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)


async def serve_app(container: Container, *, host: str, port: int, banner: str = "") -> None:
    """Serve the API and UI until SIGINT/SIGTERM; ``banner`` is printed once listening is near."""
    logs = None if container.settings.log_format == "json" else uvicorn.config.LOGGING_CONFIG
    config = uvicorn.Config(create_app(container), host=host, port=port, log_config=logs)
    # after Config: it (re)configures uvicorn's loggers; the filter goes on the one it logs to
    install_access_log_redaction()
    server = _Server(config)
    if banner:
        print(banner, flush=True)
    await server.serve()
