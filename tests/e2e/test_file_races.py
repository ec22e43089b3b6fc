"""Racing editors over HTTP (issue 10 §3): N clients on independent connections PUT (or DELETE)
one workspace file with the same ETag; exactly one wins, every other gets 412, and the file holds
exactly the winner's bytes."""

from __future__ import annotations

import asyncio
import hashlib

import httpx
import pytest

from tests.support.server import LiveServer, create_user_with_token
from yuxi.bootstrap import Container
from yuxi.workspace.filesystem import Workspace

RACERS = 8
FILES = "/api/v1/workspace/files/"


def _clients(live_server: LiveServer, token: str) -> list[httpx.AsyncClient]:
    # One client each: separate connection pools, so the requests really run side by side.
    return [live_server.client(token) for _ in range(RACERS)]


@pytest.mark.parametrize("path", ["notes/race.md", "agents/MEMORY.md"])
async def test_one_of_eight_puts_with_the_same_etag_wins(
    live_server: LiveServer, container: Container, path: str
) -> None:
    uid, token = await create_user_with_token(container, "racer")
    clients = _clients(live_server, token)
    try:
        # MEMORY.md always exists and is never replaced blindly; a new file is created only.
        precondition = {"If-Match": "*"} if path == "agents/MEMORY.md" else {"If-None-Match": "*"}
        first = await clients[0].put(
            FILES + path, content="版本 0\n".encode(), headers=precondition
        )
        assert first.status_code == 204, first.text
        etag = first.headers["ETag"]
        for round_ in range(3):
            bodies = [f"racer {i} round {round_} 写入\n".encode() for i in range(RACERS)]
            results = await asyncio.gather(
                *(
                    c.put(FILES + path, content=body, headers={"If-Match": etag})
                    for c, body in zip(clients, bodies, strict=True)
                )
            )
            codes = sorted(r.status_code for r in results)
            assert codes == [204] + [412] * (RACERS - 1), codes
            (winner,) = [i for i, r in enumerate(results) if r.status_code == 204]
            on_disk = (Workspace(container.workspace_root, uid).directory / path).read_bytes()
            assert on_disk == bodies[winner]
            etag = results[winner].headers["ETag"]
            assert etag == '"' + hashlib.sha256(on_disk).hexdigest() + '"'
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))


async def test_one_of_eight_deletes_with_the_same_etag_wins(
    live_server: LiveServer, container: Container
) -> None:
    _, token = await create_user_with_token(container, "deleter")
    clients = _clients(live_server, token)
    try:
        put = await clients[0].put(FILES + "notes/gone.md", content=b"bye\n")
        etag = put.headers["ETag"]
        results = await asyncio.gather(
            *(c.delete(FILES + "notes/gone.md", headers={"If-Match": etag}) for c in clients)
        )
        codes = sorted(r.status_code for r in results)
        # The first delete wins; the rest find the file gone (404) or changed (412), never 204.
        assert codes.count(204) == 1, codes
        assert all(code in (404, 412) for code in codes if code != 204), codes
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))
