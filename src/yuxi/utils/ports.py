"""Whether a TCP address can be listened on now (checked before a server starts anything)."""

from __future__ import annotations

import errno
import socket

__all__ = ["listen_problem"]


def listen_problem(host: str, port: int) -> str | None:
    """``None`` when ``host:port`` can be bound now, else one line saying why not.

    ``socket.create_server`` sets ``SO_REUSEADDR`` as uvicorn does, so a port left in TIME_WAIT
    counts as free and only a live listener (or a bad address) counts as a problem.
    """
    try:
        probe = socket.create_server((host, port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return f"port {port} is in use on {host}"
        return f"cannot listen on {host}:{port} ({exc.strerror or exc})"
    probe.close()
    return None
