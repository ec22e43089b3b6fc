"""Child process of R1: writes memory in a loop until the parent SIGKILLs it.

``python -m tests.reliability.crash_writer SPEC`` where SPEC is JSON ``{"database_url",
"data_dir", "identity": {uid, thread_id, run_id, request_id, worker_id}, "life", "count"}``.

Prints (flushed) ``ready`` once, then for each entry ``start <i>`` before the call and
``done <i> <status>`` after it returned. A ``done`` line is printed only once the write's
transaction has committed, so the parent knows exactly which entries were reported.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sys
from pathlib import Path

from tests.reliability.support import LARGEST_MEMORY_QUOTA
from tests.support.factories import remember
from yuxi.bootstrap import bootstrap
from yuxi.settings import Settings

# Multi-byte text (CJK, accents, an emoji, a right-to-left word) so that a torn write would
# also show up as invalid UTF-8, plus a varying pad so the published sizes differ.
_PAYLOAD = "记忆条目 ünïcødé 🙂 שלום"
ENTRY_RE = re.compile(r"\Ar1 life=(\d+) i=(\d+) (.+) sum=([0-9a-f]{12})\Z")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def entry_text(life: int, i: int) -> str:
    """The ``i``-th entry written in child life ``life``: one self-checking line."""
    body = f"r1 life={life} i={i} {_PAYLOAD} {'·' * ((life * 7 + i * 13) % 40)}"
    return f"{body} sum={_digest(body)}"


def entry_is_intact(line: str) -> bool:
    found = ENTRY_RE.match(line)
    if found is None:
        return False
    body = line[: line.rindex(" sum=")]
    return _digest(body) == found[4]


async def main(spec: dict[str, object]) -> None:
    settings = Settings(
        database_url=str(spec["database_url"]),
        data_dir=Path(str(spec["data_dir"])),
        db_pool_size=4,
        **LARGEST_MEMORY_QUOTA,
    )
    container = await bootstrap(settings)
    identity = spec["identity"]
    assert isinstance(identity, dict)
    life = int(str(spec["life"]))
    print("ready", flush=True)
    try:
        for i in range(int(str(spec["count"]))):
            print(f"start {i}", flush=True)
            result = await remember(container, identity, entry_text(life, i))
            print(f"done {i} {result['status']} {result.get('code', '-')}", flush=True)
    finally:
        await container.aclose()


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
