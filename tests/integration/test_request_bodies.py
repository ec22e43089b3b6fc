"""Request bodies are bounded before anything reads them (``yuxi.api.bodies``).

* A declared ``Content-Length`` over ``REQUEST_BODY_MAX_BYTES`` is 413 ``payload_too_large`` in
  the API's error shape, before the body is read and before credentials are checked (FastAPI
  reads a JSON body first: unbounded, a 300 MiB body cost 1.26 GiB of RSS and then a 401).
* A chunked body is cut off when it crosses the bound, having read no more than that.
* Exactly the bound passes; the largest message a run takes, escaped as much as JSON allows,
  fits under it; the two routes that stream their own larger bodies keep their own bounds.
* A run's input is one rule, in UTF-8 bytes, with one message (n ok, n+1 refused, CJK).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.support.server import create_user_with_token
from yuxi.api.app import create_app
from yuxi.bootstrap import Container
from yuxi.limits import FILE_API_MAX_BYTES, REQUEST_BODY_MAX_BYTES, RUN_INPUT_MAX_BYTES

LIMIT = REQUEST_BODY_MAX_BYTES


@pytest.fixture
async def app(container: Container) -> Any:
    return create_app(container, workers=0)


@pytest.fixture
async def client(container: Container, app: Any) -> AsyncIterator[httpx.AsyncClient]:
    _, token = await create_user_with_token(container, "bodies")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://yuxi.test",
        headers={"Authorization": f"Bearer {token}"},
    ) as c:
        yield c


def _padded_thread_body(size: int) -> bytes:
    """A valid thread-creation body of exactly ``size`` bytes (a CJK title, then whitespace)."""
    body = json.dumps({"title": "标题"}, ensure_ascii=False).encode()
    assert len(body) <= size
    return body[:-1] + b" " * (size - len(body)) + b"}"


async def _threads(client: httpx.AsyncClient) -> int:
    return len((await client.get("/api/v1/threads")).json()["threads"])


async def _asgi(app: Any, method: str, path: str, headers: list[tuple[bytes, bytes]]) -> Any:
    """Call the app with a body that must never be read; the response's status and body."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        raise AssertionError("the body was read")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"yuxi.test"), *headers],
        "client": ("127.0.0.1", 1),
        "server": ("yuxi.test", 80),
    }
    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(body)


@pytest.mark.parametrize("authorized", [True, False], ids=["with-token", "no-token"])
@pytest.mark.parametrize(
    "path", ["/api/v1/threads", "/api/v1/threads/t_x/runs", "/api/v1/session", "/api/v1/x"]
)
async def test_a_declared_body_over_the_bound_is_refused_unread(
    container: Container, app: Any, path: str, authorized: bool
) -> None:
    _, token = await create_user_with_token(container, "unread")
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % (LIMIT + 1))]
    if authorized:
        headers.append((b"authorization", b"Bearer " + token.encode()))
    status, body = await _asgi(app, "POST", path, headers)
    assert status == 413
    assert body["error"]["code"] == "payload_too_large"
    assert str(LIMIT) in body["error"]["message"]


async def test_exactly_the_bound_passes_and_one_byte_more_is_refused(
    client: httpx.AsyncClient,
) -> None:
    json_type = {"Content-Type": "application/json"}
    at = await client.post("/api/v1/threads", content=_padded_thread_body(LIMIT), headers=json_type)
    assert at.status_code == 201, at.text
    assert at.json()["title"] == "标题"
    over = await client.post(
        "/api/v1/threads", content=_padded_thread_body(LIMIT + 1), headers=json_type
    )
    assert over.status_code == 413, over.text
    assert over.json()["error"]["code"] == "payload_too_large"
    assert await _threads(client) == 1


@pytest.mark.parametrize(("size", "status"), [(LIMIT, 201), (LIMIT + 1, 413)])
async def test_a_chunked_body_is_bounded_as_it_is_read(
    client: httpx.AsyncClient, size: int, status: int
) -> None:
    body = _padded_thread_body(size)

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: the bound counts bytes
        for start in range(0, len(body), 10_000):
            yield body[start : start + 10_000]

    resp = await client.post(
        "/api/v1/threads", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert resp.status_code == status, resp.text
    if status == 413:
        assert resp.json()["error"]["code"] == "payload_too_large"
        assert await _threads(client) == 0


async def test_the_largest_run_input_fits_however_it_is_escaped(
    client: httpx.AsyncClient,
) -> None:
    """The bound is above the longest body a valid run makes: every byte of the input escaped
    as ``\\u0001`` (6 bytes of JSON per byte of text)."""
    thread = (await client.post("/api/v1/threads")).json()["thread_id"]
    text = "\u0001" * (RUN_INPUT_MAX_BYTES - 1) + "x"
    body = json.dumps({"input": text, "request_id": "r" * 128}).encode()
    assert len(body) > 6 * RUN_INPUT_MAX_BYTES - 6
    resp = await client.post(
        f"/api/v1/threads/{thread}/runs",
        content=body,
        headers={"Content-Type": "application/json"},
    )
    assert resp.status_code == 202, resp.text


@pytest.mark.parametrize("tail", ["", "a", "忆"], ids=["at", "over-ascii", "over-cjk"])
async def test_a_runs_input_is_bounded_in_utf8_bytes_with_one_message(
    client: httpx.AsyncClient, tail: str
) -> None:
    thread = (await client.post("/api/v1/threads")).json()["thread_id"]
    cjk, rest = divmod(RUN_INPUT_MAX_BYTES, 3)
    text = "忆" * cjk + "a" * rest + tail  # exactly the limit, then 1 or 3 bytes over
    resp = await client.post(f"/api/v1/threads/{thread}/runs", json={"input": text})
    if not tail:
        assert resp.status_code == 202, resp.text
        return
    assert resp.status_code == 400, resp.text  # the service's rule, whatever the length
    error = resp.json()["error"]
    assert error["code"] == "invalid_argument"
    size = len(text.encode())
    assert error["message"] == f"input is {size} UTF-8 bytes; the limit is {RUN_INPUT_MAX_BYTES}"


async def test_routes_that_bound_their_own_bodies_keep_their_bounds(
    client: httpx.AsyncClient,
) -> None:
    """A workspace file may be 1 MiB, past the general bound; one byte more is file_too_large."""
    assert FILE_API_MAX_BYTES > LIMIT
    url = "/api/v1/workspace/files/notes/big.md"
    data = ("忆" * (FILE_API_MAX_BYTES // 3) + "a" * (FILE_API_MAX_BYTES % 3)).encode()
    put = await client.put(url, content=data, headers={"Content-Type": "text/plain"})
    assert put.status_code == 204, put.text
    assert (await client.get(url)).content == data
    over = await client.put(url, content=data + b"a", headers={"Content-Type": "text/plain"})
    assert over.status_code == 413
    assert over.json()["error"]["code"] == "file_too_large"
    assert (await client.get(url)).content == data
