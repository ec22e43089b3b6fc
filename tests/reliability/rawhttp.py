"""A minimal HTTP/1.1 client over a raw socket, for requests that httpx would refuse or "fix".

httpx normalises ``..`` segments, percent-encodes bytes and validates header values; the hostile
input suite needs the exact bytes on the wire (raw ``..``, ``%2e%2e``, invalid UTF-8, huge
headers). One request per connection (``Connection: close``); the response body is de-chunked.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class RawResponse:
    status: int  # 0 when the server closed the connection without a status line
    headers: dict[str, str]
    body: bytes


async def _exchange(host: str, port: int, request: bytes, read_timeout: float) -> bytes:
    """Send ``request`` while reading the answer; every byte the server sent, even after a reset.

    A plain socket, not asyncio's streams: when the server answers (413) and closes before it
    has read a huge body, our next write fails, and a stream transport then drops the answer
    still waiting in its socket. The kernel keeps it readable after the reset; so do we.
    """
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    chunks: list[bytes] = []

    async def send() -> None:
        with contextlib.suppress(OSError):  # refused mid-body: the answer is what counts
            await loop.sock_sendall(sock, request)

    try:
        await loop.sock_connect(sock, (host, port))
        sender = asyncio.create_task(send())
        try:
            async with asyncio.timeout(read_timeout):
                while chunk := await loop.sock_recv(sock, 65536):
                    chunks.append(chunk)
        except ConnectionError:
            pass  # a reset after the answer: keep what arrived
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender
    finally:
        sock.close()
    return b"".join(chunks)


def _dechunk(data: bytes) -> bytes:
    out = bytearray()
    while data:
        size_line, _, rest = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            break
        out += rest[:size]
        data = rest[size + 2 :]
    return bytes(out)


async def raw_request(
    base_url: str,
    method: str,
    target: bytes,
    *,
    headers: list[tuple[bytes, bytes]] | None = None,
    body: bytes = b"",
    read_timeout: float = 60.0,
) -> RawResponse:
    url = urlsplit(base_url)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    lines = [
        method.encode("ascii") + b" " + target + b" HTTP/1.1",
        f"Host: {host}:{port}".encode("ascii"),
        b"Connection: close",
        b"Content-Length: " + str(len(body)).encode("ascii"),
    ]
    lines += [name + b": " + value for name, value in headers or []]
    request = b"\r\n".join(lines) + b"\r\n\r\n" + body
    data = await _exchange(host, port, request, read_timeout)
    head, _, payload = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/"):
        return RawResponse(0, {}, data)
    status_line, *header_lines = head.split(b"\r\n")
    parsed: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(b":")
        parsed[name.decode("latin-1").strip().lower()] = value.decode("latin-1").strip()
    if parsed.get("transfer-encoding", "").lower() == "chunked":
        payload = _dechunk(payload)
    return RawResponse(int(status_line.split()[1]), parsed, payload)
