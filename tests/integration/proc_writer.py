"""A separate OS process that writes memory: ``python -m tests.integration.proc_writer SPEC``.

SPEC is JSON: {"database_url", "data_dir", "identity": {...}, "contents": [...]}. Prints one JSON
result per line. Used by the cross-process concurrency tests.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from tests.integration.factories import remember
from yuxi.bootstrap import bootstrap
from yuxi.settings import Settings


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
