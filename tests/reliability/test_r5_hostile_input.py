"""R5 hostile input: a corpus of absurd arguments to the tools and absurd requests to the API.

Three surfaces:

* **tools** — ``MemoryService`` methods called directly with oversize, lone-surrogate, NUL,
  wrong-typed and absurd arguments (limits of -1, 10**30, "5", True, None, deep lists …), and
  LIKE wildcards that must never act as wildcards;
* **api** — raw HTTP requests (exact bytes on the wire): oversize bodies, invalid UTF-8 in PUT
  bodies, NUL, ``..`` / ``%2e%2e`` / absolute / backslash paths, symlinks planted in workspaces
  pointing outside, wrong-typed and unknown JSON fields, JSON nested 10,000 levels deep;
* **agent** — the offline model driving the real file and history tools over HTTP with
  traversal and symlink paths (writes go through approval, then must still be refused).

Every case must end in a clear 4xx or a structured tool error (or, for wildcards, hits that hold
one of the query's words), never a 5xx or an exception, and nothing may change on disk: the
whole workspace tree (lock files aside) and a sentinel directory outside it are hashed before
and after.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import stat
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.rawhttp import raw_request
from tests.reliability.support import TIMEOUT, report
from tests.support.factories import as_kwargs, make_run, tool_payload
from tests.support.server import LiveServer, create_user_with_token
from yuxi.bootstrap import Container
from yuxi.identity import RunIdentity
from yuxi.repositories.thread_repository import ThreadRepository
from yuxi.repositories.user_repository import UserRepository

pytestmark = [pytest.mark.pg, pytest.mark.slow, TIMEOUT]

FILES = "/api/v1/workspace/files/"
TEMP_NAME = ".MEMORY.md.0123456789abcdef0123456789abcdef.tmp"
SENTINEL = b"outside the workspace: must never change\n"

#: Cases that fail today because of product bugs (reported, not fixed here). They are run and
#: counted like every other case; the test stays green on them and turns red as soon as one of
#: them passes, so this list is trimmed when the fix lands (strict, like ``xfail(strict=True)``).
#: The 13 cases first found here (NUL in URLs and titles → 500, invalid identity values,
#: out-of-range anchors) are fixed; keep the mechanism for the next finding.
KNOWN_BUGS: dict[str, str] = {}


def tree_digest(*roots: Path) -> dict[str, str]:
    """Every entry under ``roots`` (symlinks not followed; ``.locks`` skipped) → fingerprint."""
    seen: dict[str, str] = {}
    for root in roots:
        for top, dirs, files in os.walk(root, followlinks=False):
            dirs[:] = [d for d in dirs if d != ".locks"]
            for name in [*dirs, *files]:
                path = Path(top) / name
                st = path.lstat()
                if stat.S_ISLNK(st.st_mode):
                    print_ = f"link->{os.readlink(path)}"
                elif stat.S_ISDIR(st.st_mode):
                    print_ = f"dir {stat.S_IMODE(st.st_mode):o}"
                else:
                    digest = hashlib.sha256(path.read_bytes()).hexdigest()
                    print_ = f"file {stat.S_IMODE(st.st_mode):o} {digest}"
                seen[str(path)] = print_
    return seen


@dataclass
class Outcome:
    surface: str
    name: str
    got: str
    ok: bool


class Corpus:
    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []

    def record(self, surface: str, name: str, got: str, ok: bool) -> None:
        self.outcomes.append(Outcome(surface, name, got, ok))

    async def tool(
        self, name: str, call: Callable[[], Awaitable[Any]], codes: tuple[str, ...] = ()
    ) -> None:
        """A structured tool error (one of ``codes`` when given), never an exception."""
        try:
            result = await tool_payload(call)  # the tool boundary: payload the model sees
        except Exception as exc:
            self.record("tool", name, f"exception {type(exc).__name__}: {exc}"[:200], False)
            return
        ok = (
            isinstance(result, dict)
            and result.get("status") == "error"
            and isinstance(result.get("error"), str)
            and bool(result["error"])
            and (not codes or result.get("code") in codes)
        )
        got = result.get("code", result.get("status")) if isinstance(result, dict) else result
        self.record("tool", name, str(got), ok)

    async def wildcard_search(self, name: str, call: Callable[[], Awaitable[Any]], q: str) -> None:
        """A LIKE wildcard is never a wildcard: ``%``, ``_`` and ``\\`` separate words. A query
        with no word is a structured ``invalid_argument``; otherwise every hit holds one of the
        query's words."""
        try:
            result = await tool_payload(call)
        except Exception as exc:
            self.record("tool", name, f"exception {type(exc).__name__}", False)
            return
        words = re.findall(r"[^\W_]+", q.lower())
        if isinstance(result, dict) and result.get("status") == "error":
            ok = not words and result.get("code") == "invalid_argument"
            self.record("tool", name, str(result.get("code")), ok)
            return
        items = result.get("items") if isinstance(result, dict) else None
        ok = isinstance(items, list) and all(
            any(w in i["content"].lower() for w in words) for i in items
        )
        self.record("tool", name, f"{len(items or [])} items holding a word", ok)

    async def api(
        self,
        server: LiveServer,
        token: str | None,
        name: str,
        method: str,
        target: bytes | str,
        *,
        body: bytes | Any = b"",
        headers: list[tuple[bytes, bytes]] | None = None,
        expect: tuple[int, ...] = (),
    ) -> None:
        """A 4xx (one of ``expect`` when given); 0 = connection closed, counted as a failure."""
        raw_target = target.encode("latin-1") if isinstance(target, str) else target
        all_headers = list(headers or [])
        if token is not None:
            all_headers.append((b"Authorization", b"Bearer " + token.encode("ascii")))
        if not isinstance(body, bytes):
            body = json.dumps(body).encode("utf-8")
            all_headers.append((b"Content-Type", b"application/json"))
        elif body and not any(h[0].lower() == b"content-type" for h in all_headers):
            all_headers.append((b"Content-Type", b"application/json"))
        resp = await raw_request(
            server.base_url, method, raw_target, headers=all_headers, body=body
        )
        ok = 400 <= resp.status < 500 and (not expect or resp.status in expect)
        if (
            ok
            and resp.status != 413
            and resp.headers.get("content-type", "").startswith("application/json")
        ):
            error = json.loads(resp.body).get("error", {})
            ok = bool(error.get("code")) and bool(error.get("message"))
        self.record("api", name, str(resp.status), ok)


def _later(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[[], Awaitable[Any]]:
    """``lambda: fn(*args, **kwargs)`` with the arguments bound now, not when it is called."""
    return lambda: fn(*args, **kwargs)


def _deep_list(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


async def _setup_users(container: Container, outside: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for who in ("a", "b", "c", "d"):
        uid, token = await create_user_with_token(container, f"r5-{who}")
        async with container.session_factory() as s, s.begin():
            await UserRepository(s).set_memory_enabled(uid, True)
        await container.workspace(uid).ensure_user_workspace()
        out[who] = (uid, token)
    uid_a, uid_b = out["a"][0], out["b"][0]
    await container.services.memory.write_memory_file(
        uid_a, b"r5 dup line one\n\nr5 dup line two\n"
    )

    # History: plain text plus wildcard-looking characters, and a foreign thread of user B.
    async with container.session_factory() as s, s.begin():
        repo = ThreadRepository(s)
        mine = await repo.create_conversation(uid_a, title="r5 wildcards")
        for text in ("I am 100% sure", "snake_case_name", "a back\\slash here", "plain words"):
            await repo.add_message(mine, role="user", content=text)
        theirs = await repo.create_conversation(uid_b, title="r5 foreign")
        foreign_msg = await repo.add_message(theirs, role="user", content="foreign r5 text")
    out["thread_a"], out["thread_b"], out["msg_b"] = (
        mine.thread_id,
        theirs.thread_id,
        foreign_msg.id,
    )

    # Symlinks planted inside workspaces, all pointing outside.
    (outside / "sentinel.txt").write_bytes(SENTINEL)
    (outside / "memory_target.md").write_bytes(SENTINEL)
    (outside / "agents_target").mkdir()
    (outside / "agents_target" / "MEMORY.md").write_bytes(SENTINEL)
    ws_a = container.workspace(uid_a).directory
    (ws_a / "notes").mkdir(mode=0o700)
    (ws_a / "notes" / "real.md").write_text("real\n")
    os.symlink(outside / "sentinel.txt", ws_a / "evil_file.md")
    os.symlink(outside, ws_a / "link_out")
    os.symlink("/etc/passwd", ws_a / "notes" / "passwd_link")
    ws_c = container.workspace(out["c"][0]).directory
    (ws_c / "agents" / "MEMORY.md").unlink()
    os.symlink(outside / "memory_target.md", ws_c / "agents" / "MEMORY.md")
    ws_d = container.workspace(out["d"][0]).directory
    for name in os.listdir(ws_d / "agents"):
        (ws_d / "agents" / name).unlink()
    (ws_d / "agents").rmdir()
    os.symlink(outside / "agents_target", ws_d / "agents")
    return out


async def _tool_cases(c: Corpus, container: Container, env: dict[str, Any]) -> None:
    uid_a = env["a"][0]
    run = await make_run(container, uid_a, lease_seconds=3600)
    ident = as_kwargs(run)
    memory = container.services.memory

    def write(identity: dict[str, Any], content: object, replaces: object = None) -> Any:
        """remember_memory with the identity built inside the call (forged values refused)."""
        return memory.remember_memory(RunIdentity(**identity), content, replaces)

    bad_text: list[tuple[str, Any]] = [
        ("4097 ascii bytes", "x" * 4097),
        ("4098 bytes of 2-byte chars", "é" * 2049),
        ("4098 bytes of CJK", "中" * 1366),
        ("1 MB", "y" * 1_000_000),
        ("lone high surrogate", "\ud800"),
        ("lone low surrogate inside", "a\udfffb"),
        ("surrogate run", "\udc80" * 10),
        ("NUL inside", "a\x00b"),
        ("only NUL", "\x00"),
        ("empty", ""),
        ("blank", "   "),
        ("whitespace mix", "\n\t \r\u3000"),
        ("int", 123),
        ("float nan", float("nan")),
        ("None", None),
        ("True", True),
        ("bytes", b"bytes"),
        ("bytearray", bytearray(b"x")),
        ("list", ["list"]),
        ("dict", {"k": "v"}),
        ("deep list 10000", _deep_list(10_000)),
        ("object", object()),
    ]
    for label, value in bad_text:
        await c.tool(
            f"remember content {label}",
            _later(write, ident, value),
            ("invalid_argument",),
        )
    for label, value in bad_text:
        if value is None:
            continue  # replaces=None means "add", not a hostile value
        await c.tool(
            f"remember replaces {label}",
            _later(write, ident, "r5 ok", value),
            ("invalid_argument",),
        )
    await c.tool(
        "replaces not present",
        lambda: write(ident, "n", "absent text"),
        ("memory_conflict",),
    )
    await c.tool(
        "replaces ambiguous",
        lambda: write(ident, "n", "r5 dup"),
        ("memory_conflict",),
    )
    forged: list[tuple[str, dict[str, Any]]] = [
        ("uid None", {"uid": None}),
        ("uid empty", {"uid": ""}),
        ("uid int", {"uid": 7}),
        ("uid of another user", {"uid": env["b"][0]}),
        ("uid lone surrogate", {"uid": "\ud800"}),
        ("uid with NUL", {"uid": "u\x00x"}),
        ("worker forged", {"worker_id": "w_" + "0" * 32}),
        ("worker empty", {"worker_id": ""}),
        ("run missing", {"run_id": "00000000-0000-0000-0000-000000000000"}),
        ("run absurd", {"run_id": "x" * 10_000}),
        ("request other", {"request_id": "other"}),
        ("thread other", {"thread_id": env["thread_b"]}),
        ("thread lone surrogate", {"thread_id": "\udfff"}),
    ]
    for label, override in forged:
        await c.tool(
            f"remember identity {label}",
            _later(write, {**ident, **override}, "r5 forged"),
            ("unauthorized_run",),
        )

    search = container.services.lookback.search_thread_messages
    bad_queries: list[tuple[str, Any]] = [
        ("empty", ""),
        ("blank", "  \t "),
        ("257 chars", "q" * 257),
        ("1 MB", "q" * 1_000_000),
        ("lone surrogate", "\ud800"),
        ("NUL", "a\x00b"),
        ("int", 123),
        ("None", None),
        ("list", ["q"]),
        ("bytes", b"q"),
        ("dict", {"q": 1}),
        ("True", True),
        ("deep list", _deep_list(10_000)),
    ]
    for label, value in bad_queries:
        await c.tool(
            f"search query {label}",
            _later(search, uid=uid_a, query=value),
            ("invalid_argument",),
        )
    bad_limits: list[tuple[str, Any]] = [
        ("-1", -1),
        ("0", 0),
        ("11", 11),
        ("10**30", 10**30),
        ("-10**30", -(10**30)),
        ("'five'", "five"),
        ("'-1'", "-1"),
        ("'99999999999999999999'", "99999999999999999999"),
        ("True", True),
        ("False", False),
        ("None", None),
        ("5.5", 5.5),
        ("inf", float("inf")),
        ("[5]", [5]),
        ("''", ""),
    ]
    for label, value in bad_limits:
        await c.tool(
            f"search limit {label}",
            _later(search, uid=uid_a, query="plain", limit=value),
            ("invalid_argument",),
        )
    for label, value in (("None", None), ("empty", ""), ("int", 1)):
        await c.tool(
            f"search uid {label}",
            _later(search, uid=value, query="plain"),
            ("unauthorized_run",),
        )
    for q in ("%", "_", "\\", "%%", "_%_", "%_%", "a%b", "100%", "snake_case", "\\slash"):
        await c.wildcard_search(
            f"search wildcard {q!r}", _later(search, uid=uid_a, query=q, limit=10), q
        )
    await c.wildcard_search(
        "search limit '5' (digit string accepted as 5)",
        lambda: search(uid=uid_a, query="plain", limit="5"),
        "plain",
    )

    read = container.services.lookback.read_thread_messages
    own, foreign = env["thread_a"], env["thread_b"]
    bad_threads: list[tuple[str, Any, tuple[str, ...]]] = [
        ("None", None, ("invalid_argument",)),
        ("empty", "", ("invalid_argument",)),
        ("blank", "   ", ("invalid_argument",)),
        ("65 chars", "t" * 65, ("invalid_argument",)),
        ("int", 123, ("invalid_argument",)),
        ("list", [own], ("invalid_argument",)),
        ("bytes", own.encode(), ("invalid_argument",)),
        ("lone surrogate", "\ud800", ("not_found", "invalid_argument")),
        ("NUL", "a\x00b", ("not_found", "invalid_argument")),
        ("foreign thread", foreign, ("not_found",)),
        ("foreign thread upper-cased", foreign.upper(), ("not_found",)),
        ("LIKE wildcard", "%", ("not_found",)),
        ("SQL quote", "' OR '1'='1", ("not_found",)),
        ("traversal", "../../etc/passwd", ("not_found",)),
    ]
    for label, value, codes in bad_threads:
        await c.tool(f"read thread_id {label}", _later(read, uid=uid_a, thread_id=value), codes)
    bad_anchors: list[tuple[str, Any]] = [
        ("-1", -1),
        ("0", 0),
        ("10**30", 10**30),
        ("2**63", 2**63),
        ("True", True),
        ("'abc'", "abc"),
        ("[1]", [1]),
        ("1.5", 1.5),
        ("'-5'", "-5"),
    ]
    for label, value in bad_anchors:
        await c.tool(
            f"read message_id {label}",
            _later(read, uid=uid_a, thread_id=own, message_id=value),
            ("invalid_argument",),
        )
    await c.tool(
        "read own thread anchored on a foreign message",
        lambda: read(uid=uid_a, thread_id=own, message_id=env["msg_b"]),
        ("not_found",),
    )
    await c.tool(
        "read foreign thread anchored on its message",
        lambda: read(uid=uid_a, thread_id=foreign, message_id=env["msg_b"]),
        ("not_found",),
    )
    for label, value in (("-1", -1), ("0", 0), ("21", 21), ("10**30", 10**30), ("True", True)):
        await c.tool(
            f"read limit {label}",
            _later(read, uid=uid_a, thread_id=own, limit=value),
            ("invalid_argument",),
        )
    for label, value in (("'true'", "true"), ("1", 1), ("None", None), ("[True]", [True])):
        await c.tool(
            f"read include_tools {label}",
            _later(read, uid=uid_a, thread_id=own, include_tools=value),
            ("invalid_argument",),
        )


async def _api_cases(c: Corpus, server: LiveServer, env: dict[str, Any]) -> None:
    token = env["a"][1]
    thread = env["thread_a"]

    async def api(name: str, method: str, target: bytes | str, **kw: Any) -> None:
        await c.api(server, token, name, method, target, **kw)

    traversal = [
        "../../../etc/passwd",
        "agents/../../x",
        "..",
        "%2e%2e/%2e%2e/etc/passwd",
        "%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
        "..%2f..%2fetc%2fpasswd",
        "/etc/passwd",
        "%2Fetc%2Fpasswd",
        "..%5c..%5cetc%5cpasswd",
        "notes%5creal.md",
        "a%00b",
        "agents/./MEMORY.md",
        "agents//MEMORY.md",
        "agents/MEMORY.md/",
        f"agents/{TEMP_NAME}",
        "a" * 300,
        "/".join(["d" * 200] * 6),
    ]
    for path in traversal:
        for method in ("GET", "PUT", "DELETE"):
            body = b"pwned\n" if method == "PUT" else b""
            await api(f"{method} {path[:40]}", method, FILES + path, body=body)
    for path in ("%ff%fe", "%c3%28", "%ed%a0%80"):  # invalid UTF-8 in the path itself
        for method in ("GET", "DELETE"):
            await api(f"{method} invalid-utf8 path {path}", method, FILES + path)
    for query in ("../..", "/etc", "link_out", "a%00b", "evil_file.md"):
        await api(f"list path={query}", "GET", f"/api/v1/workspace/files?path={query}")

    # Symlinks planted in the workspaces (user a: a file and a dir link; c: MEMORY.md is a
    # link; d: agents/ is a link). All refused, nothing outside read or written.
    for path in ("evil_file.md", "link_out/sentinel.txt", "link_out/new.md", "notes/passwd_link"):
        for method in ("GET", "PUT", "DELETE"):
            body = b"pwned\n" if method == "PUT" else b""
            await api(f"{method} symlink {path}", method, FILES + path, body=body)
    for who, path in (("c", "agents/MEMORY.md"), ("d", "agents/MEMORY.md"), ("d", "notes/x.md")):
        for method in ("GET", "PUT", "DELETE"):
            body = b"pwned\n" if method == "PUT" else b""
            await c.api(
                server, env[who][1], f"{method} {who} {path}", method, FILES + path, body=body
            )
    for path in ("agents", "notes"):  # directories are not files
        for method in ("GET", "PUT", "DELETE"):
            await api(f"{method} directory {path}", method, FILES + path, body=b"x")

    # Bodies: size, encoding, NUL, preconditions.
    await api("PUT file 1 MiB + 1", "PUT", FILES + "notes/big.md", body=b"a" * (2**20 + 1))
    await api("PUT file 5 MiB", "PUT", FILES + "notes/big.md", body=b"a" * (5 * 2**20))
    await api("PUT MEMORY 128 KiB + 1", "PUT", FILES + "agents/MEMORY.md", body=b"m" * 131073)
    invalid_utf8 = [b"\xff", b"abc\xc3(", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf8\x88\x80\x80\x80"]
    invalid_utf8 += [b"ok \xe4\xb8", b"\xfe\xff\x00a"]
    for data in invalid_utf8:
        for path in ("agents/MEMORY.md", "notes/real.md", "notes/new.md"):
            await api(f"PUT {path} invalid UTF-8 {data!r}", "PUT", FILES + path, body=data)
    await api("PUT MEMORY with NUL", "PUT", FILES + "agents/MEMORY.md", body=b"a\x00b\n")
    for tag in (b'"stale"', b"garbage", b'W/"x", "y"'):
        await api(
            f"PUT MEMORY If-Match {tag!r}",
            "PUT",
            FILES + "agents/MEMORY.md",
            body=b"x\n",
            headers=[(b"If-Match", tag)],
            expect=(412,),
        )

    # JSON bodies: wrong types, unknown fields, invalid bytes, absurd size and depth.
    deep_array = b"[" * 10_000 + b"]" * 10_000
    deep_object = b'{"a":' * 10_000 + b"1" + b"}" * 10_000
    runs = f"/api/v1/threads/{thread}/runs"
    json_cases: list[tuple[str, str, Any]] = [
        ("/api/v1/threads", "truncated", b"{"),
        ("/api/v1/threads", "array", b"[]"),
        ("/api/v1/threads", "string", b'"s"'),
        ("/api/v1/threads", "null", b"null"),
        ("/api/v1/threads", "title int", {"title": 123}),
        ("/api/v1/threads", "title list", {"title": ["x"]}),
        ("/api/v1/threads", "title 201", {"title": "x" * 201}),
        ("/api/v1/threads", "title NUL", {"title": "a\u0000b"}),
        ("/api/v1/threads", "title lone surrogate", b'{"title": "\\udfff"}'),
        ("/api/v1/threads", "unknown field", {"title": "t", "uid": "someone"}),
        ("/api/v1/threads", "deep array", deep_array),
        ("/api/v1/threads", "deep object", deep_object),
        ("/api/v1/threads", "invalid UTF-8", b'{"title": "\xff\xfe"}'),
        (runs, "input int", {"input": 123}),
        (runs, "input list", {"input": ["x"]}),
        (runs, "input null", {"input": None}),
        (runs, "input empty", {"input": ""}),
        (runs, "input blank", {"input": "   "}),
        (runs, "input NUL", {"input": "a\u0000b"}),
        (runs, "input lone surrogate", b'{"input": "\\ud800"}'),
        (runs, "input 40000", {"input": "x" * 40_000}),
        (runs, "input 10 MB", {"input": "x" * 10_000_000}),
        (runs, "input deep", {"input": _deep_list(500)}),
        (runs, "no input", {}),
        (runs, "unknown field", {"input": "hi", "worker_id": "w_x"}),
        (runs, "request_id empty", {"input": "hi", "request_id": ""}),
        (runs, "request_id 129", {"input": "hi", "request_id": "r" * 129}),
        (runs, "request_id newline", {"input": "hi", "request_id": "a\nb"}),
        (runs, "request_id int", {"input": "hi", "request_id": 5}),
        (runs, "request_id non-ascii", {"input": "hi", "request_id": "请求"}),
        (runs, "deep array", deep_array),
        (runs, "invalid UTF-8", b'{"input": "\xc3\x28"}'),
        (runs + "?wait=maybe", "wait=maybe", {"input": "hi"}),
        ("/api/v1/agent-calls", "input int", {"input": 5}),
        ("/api/v1/agent-calls", "deep object", deep_object),
        ("/api/v1/runs/none/resume", "decision maybe", {"decision": "maybe"}),
        ("/api/v1/runs/none/resume", "decision int", {"decision": 1}),
        ("/api/v1/runs/none/resume", "missing run", {"decision": "approve"}),
        ("/api/v1/runs/none/resume", "deep array", deep_array),
    ]
    for target, label, body in json_cases:
        await api(f"POST {target[:30]} {label}", "POST", target, body=body)
    # A body far over the bound, with and without a token: refused before it is read or the
    # token checked (413, not 401), on every JSON route (yuxi.api.bodies).
    huge = b'{"input": "' + b"x" * (16 * 2**20) + b'"}'
    for target in (runs, "/api/v1/threads", "/api/v1/session", "/api/v1/me/config"):
        for who, key in (("no token", None), ("token", token)):
            await c.api(
                server,
                key,
                f"POST 16 MiB {who} {target[:30]}",
                "POST",
                target,
                body=huge,
                expect=(413,),
            )
    config_cases: list[tuple[str, Any]] = [
        ("string", {"enable_memory": "true"}),
        ("int", {"enable_memory": 1}),
        ("null", {"enable_memory": None}),
        ("missing", {}),
        ("unknown field", {"enable_memory": True, "uid": "x"}),
        ("array", [True]),
        ("deep", deep_object),
    ]
    for label, body in config_cases:
        await api(f"PUT config {label}", "PUT", "/api/v1/me/config", body=body)

    # Query strings and path parameters.
    for query in ("limit=-1", "limit=0", "limit=1000000000000000000000000000000", "limit=abc"):
        await api(f"list threads {query}", "GET", f"/api/v1/threads?{query}")
    await api("list threads include_archived=maybe", "GET", "/api/v1/threads?include_archived=2")
    for query in ("after=-1", "after=1000000000000000000000000000000", "after=x"):
        await api(f"events {query}", "GET", f"/api/v1/runs/none/events?{query}")
    for ident in ("a%00b", "%ff", "x" * 5000, "%2e%2e", "' OR '1'='1", "%25"):
        await api(f"GET thread {ident[:20]}", "GET", f"/api/v1/threads/{ident}")
        await api(f"GET run {ident[:20]}", "GET", f"/api/v1/runs/{ident}")
        await api(f"cancel run {ident[:20]}", "POST", f"/api/v1/runs/{ident}/cancel")
        await api(
            f"POST runs on thread {ident[:20]}",
            "POST",
            f"/api/v1/threads/{ident}/runs",
            body={"input": "hi"},
        )
    for ident in ("a%00b", "x" * 5000):
        short = ident[:20]
        await api(f"GET events {short}", "GET", f"/api/v1/runs/{ident}/events")
        await api(
            f"resume run {short}",
            "POST",
            f"/api/v1/runs/{ident}/resume",
            body={"decision": "reject"},
        )
        await api(f"archive thread {short}", "POST", f"/api/v1/threads/{ident}/archive")
        await api(f"unarchive thread {short}", "POST", f"/api/v1/threads/{ident}/unarchive")
        await api(f"DELETE thread {short}", "DELETE", f"/api/v1/threads/{ident}")

    # Authentication with absurd credentials.
    for label, value in (
        ("huge token", b"Bearer " + b"x" * 10_000),
        ("latin-1 token", b"Bearer \xff\xfe"),
        ("basic", b"Basic Zm9vOmJhcg=="),
        ("empty bearer", b"Bearer "),
        ("sql token", b"Bearer ' OR 1=1 --"),
    ):
        await c.api(
            server,
            None,
            f"auth {label}",
            "GET",
            "/api/v1/me",
            headers=[(b"Authorization", value)],
            expect=(400, 401),
        )


async def _agent_cases(c: Corpus, server: LiveServer, env: dict[str, Any]) -> None:
    """The offline model calls the real tools with hostile arguments; approvals are granted."""
    token = env["a"][1]
    cases = {
        "read traversal": "read file: ../../etc/passwd",
        "read symlinked file": "read file: evil_file.md",
        "read through symlinked dir": "read file: link_out/sentinel.txt",
        "read symlink to /etc/passwd": "read file: notes/passwd_link",
        "read temp name": f"read file: agents/{TEMP_NAME}",
        "read thread traversal": "read thread: ../../../etc",
        "read foreign thread": f"read thread: {env['thread_b']}",
        "read thread anchor 10**20": f"read thread: {env['thread_a']} at 99999999999999999999",
        "write traversal": "write file ../escape.md: pwned",
        "write through symlinked dir": "write file link_out/new.md: pwned",
        "write symlinked file": "write file evil_file.md: pwned",
        "write symlink to /etc/passwd": "write file notes/passwd_link: pwned",
    }

    async def one(label: str, text: str) -> None:
        async with server.client(token, timeout=120) as client:
            t = (await client.post("/api/v1/threads", json={})).json()["thread_id"]
            resp = await client.post(f"/api/v1/threads/{t}/runs?wait=true", json={"input": text})
            run = resp.json()
            if resp.status_code == 200 and run["status"] == "interrupted":
                resp = await client.post(
                    f"/api/v1/runs/{run['run_id']}/resume?wait=true", json={"decision": "approve"}
                )
                run = resp.json()
            detail = (await client.get(f"/api/v1/threads/{t}")).json()
        results = [
            json.loads(m["content"])
            for m in detail["messages"]
            if m["message_type"] == "tool_result"
        ]
        ok = (
            resp.status_code == 200
            and run["status"] == "completed"
            and len(results) == 1
            and results[0].get("status") == "error"
            and bool(results[0].get("code"))
        )
        got = results[0].get("code") if results else f"{resp.status_code} {run.get('status')}"
        c.record("agent", label, f"{got} (run {run.get('status')})", ok)

    await asyncio.gather(*(one(label, text) for label, text in cases.items()))


async def test_hostile_input_corpus(
    live_server: LiveServer, container: Container, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    env = await _setup_users(container, outside)
    roots = (container.workspace_root, outside)
    before = tree_digest(*roots)
    corpus = Corpus()
    await _tool_cases(corpus, container, env)
    await _api_cases(corpus, live_server, env)
    await _agent_cases(corpus, live_server, env)
    after = tree_digest(*roots)

    changed = sorted(
        path for path in before.keys() | after.keys() if before.get(path) != after.get(path)
    )
    failures = [o for o in corpus.outcomes if not o.ok and o.name not in KNOWN_BUGS]
    known = [o for o in corpus.outcomes if not o.ok and o.name in KNOWN_BUGS]
    fixed = sorted(set(KNOWN_BUGS) - {o.name for o in known})
    by_surface = Counter(o.surface for o in corpus.outcomes)
    statuses = Counter(o.got for o in corpus.outcomes if o.surface == "api")
    unexpected_5xx = [o for o in failures if o.got.startswith("5")]
    report(
        "R5 hostile input",
        cases=len(corpus.outcomes),
        tool_cases=by_surface["tool"],
        api_cases=by_surface["api"],
        agent_cases=by_surface["agent"],
        failures=len(failures),
        known_product_bugs=len(known),
        server_5xx=sum(n for code, n in statuses.items() if code.startswith("5")),
        files_changed=len(changed),
        api_statuses=dict(sorted(statuses.items())),
    )
    for o in known:
        print(
            f"[reliability] R5 known bug: {o.surface} {o.name!r} -> {o.got}: {KNOWN_BUGS[o.name]}"
        )
    assert len(corpus.outcomes) >= 100
    assert failures == [], "\n".join(f"{o.surface} {o.name!r} -> {o.got}" for o in failures)
    assert changed == [], changed
    assert unexpected_5xx == []
    assert fixed == [], f"known bugs no longer reproduce, remove them from KNOWN_BUGS: {fixed}"
