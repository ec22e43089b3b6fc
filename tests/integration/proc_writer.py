"""A separate OS process that writes memory: ``python -m tests.integration.proc_writer SPEC``.

SPEC is JSON: {"database_url", "data_dir", "identity": {...}, "contents": [...]}. Prints one JSON
result per line. Used by the cross-process concurrency tests.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.support.factories import as_kwargs, remember
from yuxi.bootstrap import Container, bootstrap
from yuxi.identity import RunIdentity
from yuxi.settings import Settings

REPO = Path(__file__).resolve().parents[2]


async def start_writer(
    container: Container, identity: RunIdentity, contents: Sequence[str]
) -> asyncio.subprocess.Process:
    """A writer process that remembers ``contents`` in order as ``identity`` (the caller's
    database and data directory)."""
    spec = {
        "database_url": container.database_url,
        "data_dir": str(container.settings.data_dir),
        "identity": as_kwargs(identity),
        "contents": list(contents),
    }
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.integration.proc_writer",
        json.dumps(spec),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


async def writer_statuses(proc: asyncio.subprocess.Process) -> list[str]:
    """The ``status`` of each write the process made (it must have exited cleanly)."""
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return [json.loads(line)["status"] for line in out.decode().splitlines()]


async def main(spec: dict) -> None:  # type: ignore[type-arg]
    settings = Settings(database_url=spec["database_url"], data_dir=Path(spec["data_dir"]))
    container = await bootstrap(settings)
    try:
        for content in spec["contents"]:
            result = await remember(container, spec["identity"], content)
            print(json.dumps(result), flush=True)
    finally:
        await container.aclose()


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
