"""A minimal HTTP/1.1 client over a raw socket, for requests that httpx would refuse or "fix".

httpx normalises ``..`` segments, percent-encodes bytes and validates header values; the hostile
input suite needs the exact bytes on the wire (raw ``..``, ``%2e%2e``, invalid UTF-8, huge
headers). One request per connection (``Connection: close``); the response body is de-chunked.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class RawResponse:
    status: int  # 0 when the server closed the connection without a status line
    headers: dict[str, str]
    body: bytes


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
    reader, writer = await asyncio.open_connection(host, port)

    async def send() -> None:
        # In slices, concurrently with reading: the server may answer (413) and close before
        # it has read a huge body, and the answer must not be lost behind our own write error.
        with contextlib.suppress(ConnectionError):
            for start in range(0, len(request), 65536):
                writer.write(request[start : start + 65536])
                await writer.drain()

    sender = asyncio.create_task(send())
    chunks: list[bytes] = []
    try:
        async with asyncio.timeout(read_timeout):
            while chunk := await reader.read(65536):
                chunks.append(chunk)
    except ConnectionError:
        pass  # keep what arrived before the reset
    finally:
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await sender
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    data = b"".join(chunks)
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
