"""R6 tenancy: randomized probes with other users' thread, run and message ids.

Victims fill their accounts through the real HTTP API with unique secret markers — in thread
titles, chat messages, replies and run events, tool calls, MEMORY.md, an archived thread, a
thread in the trash and an interrupted run waiting for approval. Attackers then probe, in random
order, every API route that takes an id (thread view/runs/archive/unarchive/delete, the trash's
restore and delete now, run view/events/resume/cancel) with
the victims' ids, list their own threads and memory, call the history tools directly with
foreign thread and message ids and with searches for the markers' prefixes, and drive the
offline model to do the same. Asserted: 0 foreign bytes in any response (no marker tail, no
victim uid, no victim thread id in a listing), the expected 404 / ``not_found`` for every direct
object access, and afterwards the victims' data is exactly as it was.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import random
import secrets
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.reliability.support import TIMEOUT, report, scale
from tests.support.factories import memory_file, tool_payload
from tests.support.server import LiveServer, create_user_with_token
from yuxi.bootstrap import Container

pytestmark = [pytest.mark.pg, pytest.mark.slow, TIMEOUT]

VICTIMS = 3
ATTACKERS = 2
PREFIX = "VS"


def marker() -> str:
    """A secret: ``VS`` + 8 hex (attackers may search this prefix) + a 16-hex tail (never)."""
    return PREFIX + secrets.token_hex(12)


@dataclass
class Victim:
    uid: str
    token: str
    markers: list[str] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    messages: list[int] = field(default_factory=list)
    interrupted: str = ""
    memory_sha: str = ""
    trashed: str = ""  # a deleted thread, in the trash


@dataclass
class Attacker:
    uid: str
    token: str
    client: httpx.AsyncClient
    thread: str = ""
    messages: list[int] = field(default_factory=list)


async def _say(c: httpx.AsyncClient, thread: str, text: str) -> dict[str, Any]:
    resp = await c.post(f"/api/v1/threads/{thread}/runs?wait=true", json={"input": text})
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


async def _victim(server: LiveServer, container: Container, n: int) -> Victim:
    uid, token = await create_user_with_token(container, f"r6-victim-{n}")
    v = Victim(uid, token)
    async with server.client(token, timeout=120) as c:
        assert (await c.put("/api/v1/me/config", json={"enable_memory": True})).status_code == 200
        for kind in ("chat", "archived", "approval"):
            title = marker()
            resp = await c.post("/api/v1/threads", json={"title": f"{kind} {title}"})
            assert resp.status_code == 201, resp.text
            v.markers.append(title)
            v.threads.append(resp.json()["thread_id"])
        chat, archived, approval = v.threads
        for text in (
            f"remember: my locker code is {(m1 := marker())}",
            f"note for later {(m2 := marker())}",
            f"search history: {m2[:10]}",
            f"read thread: {archived}",
        ):
            v.runs.append((await _say(c, chat, text))["run_id"])
        v.markers += [m1, m2]
        await _say(c, archived, f"an archived secret {(m3 := marker())}")
        v.markers.append(m3)
        assert (await c.post(f"/api/v1/threads/{archived}/archive")).status_code == 200
        paused = await _say(c, approval, f"write file notes/x.md: {(m4 := marker())}")
        assert paused["status"] == "interrupted", paused
        v.markers.append(m4)
        v.interrupted = paused["run_id"]
        v.runs.append(v.interrupted)
        resp = await c.post("/api/v1/threads", json={"title": f"trashed {(m5 := marker())}"})
        v.trashed = resp.json()["thread_id"]
        await _say(c, v.trashed, f"a secret in the trash {(m6 := marker())}")
        assert (await c.delete(f"/api/v1/threads/{v.trashed}")).status_code == 204
        trash = (await c.get("/api/v1/trash")).text
        assert m5[len(PREFIX) + 8 :] in trash  # the owner sees it in the trash
        for thread in v.threads:
            detail = (await c.get(f"/api/v1/threads/{thread}")).json()
            v.messages += [m["message_id"] for m in detail["messages"]]
        # Positive control: the owner does see every marker, so their absence elsewhere means
        # something (and the search tool does find the owner's own marker, a whole term).
        own = "\n".join([(await c.get(f"/api/v1/threads/{t}")).text for t in v.threads])
    v.memory_sha = hashlib.sha256(memory_file(container, uid).read_bytes()).hexdigest()
    assert m1 in memory_file(container, uid).read_text()
    assert all(m[len(PREFIX) + 8 :] in own for m in v.markers)
    v.markers += [m5, m6]  # the trashed thread's: forbidden to others too
    lookback = container.services.lookback
    found = await tool_payload(lambda: lookback.search_thread_messages(uid=uid, query=m2))
    assert m2 in json.dumps(found), found
    return v


async def _attacker(server: LiveServer, container: Container, n: int) -> Attacker:
    uid, token = await create_user_with_token(container, f"r6-attacker-{n}")
    a = Attacker(uid, token, server.client(token, timeout=120))
    assert (await a.client.put("/api/v1/me/config", json={"enable_memory": True})).status_code
    a.thread = (await a.client.post("/api/v1/threads", json={"title": "mine"})).json()["thread_id"]
    await _say(a.client, a.thread, "remember: the attacker likes tea")
    detail = (await a.client.get(f"/api/v1/threads/{a.thread}")).json()
    # Only what the history tools may show: tool-call and tool-result rows are the attacker's
    # own too, but never visible, so an anchor on them is "not found" like a foreign one.
    a.messages = [
        m["message_id"]
        for m in detail["messages"]
        if m["role"] in ("user", "assistant") and m["message_type"] == "text"
    ]
    return a


class Probes:
    def __init__(self, victims: list[Victim]) -> None:
        # Foreign bytes: the markers' secret tails (attackers only ever send the prefix) and the
        # victims' uids; thread ids of victims only where the attacker did not send them.
        self.forbidden = [m[len(PREFIX) + 8 :] for v in victims for m in v.markers]
        self.forbidden += [v.uid for v in victims]
        self.victim_threads = [t for v in victims for t in [*v.threads, v.trashed]]
        self.kinds: Counter[str] = Counter()
        self.failures: list[str] = []
        self.bytes_scanned = 0

    def check(self, kind: str, body: str, ok: bool, detail: str, *, listing: bool = False) -> None:
        self.kinds[kind] += 1
        self.bytes_scanned += len(body.encode("utf-8", "surrogatepass"))
        leaked = [f for f in self.forbidden if f in body]
        if listing:
            leaked += [t for t in self.victim_threads if t in body]
        if leaked:
            self.failures.append(f"{kind}: foreign bytes {leaked[:2]} in {body[:200]!r}")
        if not ok:
            self.failures.append(f"{kind}: {detail} {body[:200]!r}")


def _http_probes(a: Attacker, v: Victim, rng: random.Random) -> dict[str, Callable[[], Any]]:
    c = a.client
    thread = rng.choice(v.threads)
    run = rng.choice(v.runs)
    variant = rng.choice([thread, thread.upper(), f"{thread}%20", thread[:-1]])
    return {
        "GET thread": lambda: c.get(f"/api/v1/threads/{variant}"),
        "POST run on thread": lambda: c.post(
            f"/api/v1/threads/{thread}/runs", json={"input": "read thread: " + thread}
        ),
        "archive thread": lambda: c.post(f"/api/v1/threads/{thread}/archive"),
        "unarchive thread": lambda: c.post(f"/api/v1/threads/{thread}/unarchive"),
        "DELETE thread": lambda: c.delete(f"/api/v1/threads/{thread}"),
        "GET thread memory": lambda: c.get(f"/api/v1/threads/{variant}/memory"),
        "DELETE thread forgetting": lambda: c.delete(
            f"/api/v1/threads/{thread}?forget_memory=true"
        ),
        "GET run": lambda: c.get(f"/api/v1/runs/{run}"),
        "GET events": lambda: c.get(f"/api/v1/runs/{run}/events", headers={"Last-Event-ID": "0"}),
        "resume": lambda: c.post(
            f"/api/v1/runs/{rng.choice([v.interrupted, run])}/resume",
            json={"decision": rng.choice(["approve", "reject"])},
        ),
        "cancel": lambda: c.post(f"/api/v1/runs/{run}/cancel"),
        "restore from the trash": lambda: c.post(
            f"/api/v1/trash/{rng.choice([v.trashed, thread])}/restore"
        ),
        "delete now from the trash": lambda: c.delete(
            f"/api/v1/trash/{rng.choice([v.trashed, thread])}"
        ),
    }


async def _probe(
    p: Probes, a: Attacker, victims: list[Victim], container: Container, rng: random.Random
) -> None:
    v = rng.choice(victims)
    surface = rng.random()
    if surface < 0.55:  # direct object access over HTTP: always 404
        kind, make = rng.choice(sorted(_http_probes(a, v, rng).items()))
        resp = await make()
        p.check(f"http {kind}", resp.text, resp.status_code == 404, f"status {resp.status_code}")
    elif surface < 0.65:  # own listings and own memory over HTTP
        if rng.random() < 0.2:
            resp = await a.client.get("/api/v1/trash")
            p.check("http own trash", resp.text, resp.status_code == 200, "", listing=True)
        elif rng.random() < 0.5:
            archived = rng.choice(["true", "false"])
            resp = await a.client.get(f"/api/v1/threads?include_archived={archived}&limit=200")
            p.check("http list threads", resp.text, resp.status_code == 200, "", listing=True)
        else:
            resp = await a.client.get("/api/v1/workspace/files/agents/MEMORY.md")
            p.check("http own memory", resp.text, resp.status_code == 200, "", listing=True)
    else:  # the history tools, called with foreign ids and marker prefixes
        memory = container.services.lookback
        choice = rng.randrange(5)
        if choice == 0:
            result = await tool_payload(
                lambda: memory.read_thread_messages(
                    uid=a.uid, thread_id=rng.choice(v.threads), include_tools=rng.random() < 0.5
                )
            )
            kind, ok = "tool read foreign thread", result.get("code") == "not_found"
        elif choice == 1:
            result = await tool_payload(
                lambda: memory.read_thread_messages(
                    uid=a.uid, thread_id=rng.choice(v.threads), message_id=rng.choice(v.messages)
                )
            )
            kind, ok = "tool read foreign thread+message", result.get("code") == "not_found"
        elif choice == 2:
            result = await tool_payload(
                lambda: memory.read_thread_messages(
                    uid=a.uid, thread_id=a.thread, message_id=rng.choice(v.messages)
                )
            )
            kind, ok = "tool read own thread, foreign anchor", result.get("code") == "not_found"
        elif choice == 3:
            near = rng.choice(v.messages) + rng.randint(-3, 3)
            result = await tool_payload(
                lambda: memory.read_thread_messages(
                    uid=a.uid, thread_id=a.thread, message_id=max(1, near), include_tools=True
                )
            )
            own = near in a.messages
            kind = "tool read own thread, neighbouring anchor"
            ok = result.get("status") != "error" if own else result.get("code") == "not_found"
        else:
            query = rng.choice(
                [
                    PREFIX,
                    rng.choice(v.markers),  # a whole victim marker: one term
                    rng.choice(v.markers)[: rng.randint(3, 10)],
                    "locker code",
                    "secret",
                ]
            )
            result = await tool_payload(
                lambda: memory.search_thread_messages(uid=a.uid, query=query, limit=10)
            )
            # Any hit is the attacker's own (a word of the query in its own thread); the
            # victim's bytes are checked for below.
            items = result.get("items", [])
            kind = "tool search marker or prefix"
            ok = isinstance(items, list) and all(i.get("thread_id") == a.thread for i in items)
        p.check(kind, json.dumps(result, ensure_ascii=False), ok, "unexpected result")


async def _agent_probe(p: Probes, a: Attacker, v: Victim, rng: random.Random) -> None:
    """The offline model does the probing; every byte of the run's record is scanned."""
    texts = [
        f"read thread: {rng.choice(v.threads)}",
        f"read thread: {a.thread} at {rng.choice(v.messages)} with tools",
        f"search history: {rng.choice(v.markers)[:10]}",
        "what do you remember?",
    ]
    text = rng.choice(texts)
    resp = await a.client.post(f"/api/v1/threads/{a.thread}/runs?wait=true", json={"input": text})
    run = resp.json()
    events = await a.client.get(f"/api/v1/runs/{run.get('run_id')}/events")
    detail = await a.client.get(f"/api/v1/threads/{a.thread}")
    body = "\n".join((resp.text, events.text, detail.text))
    ok = resp.status_code == 200 and run.get("status") == "completed"
    p.check("agent " + text.split(":")[0], body, ok, f"run {run.get('status')}")


async def test_randomized_cross_tenant_probes(
    live_server: LiveServer, container: Container
) -> None:
    probes_wanted = scale(200, 1000)
    agent_probes = scale(8, 40)
    seed = time.time_ns()
    rng = random.Random(seed)
    victims = list(
        await asyncio.gather(*(_victim(live_server, container, n) for n in range(VICTIMS)))
    )
    attackers = [await _attacker(live_server, container, n) for n in range(ATTACKERS)]
    p = Probes(victims)
    gate = asyncio.Semaphore(8)

    async def guarded(make: Callable[[], Awaitable[None]]) -> None:
        async with gate:
            await make()

    jobs: list[Callable[[], Awaitable[None]]] = []
    for _ in range(probes_wanted):
        a, sub = rng.choice(attackers), random.Random(rng.random())
        jobs.append(functools.partial(_probe, p, a, victims, container, sub))
    try:
        await asyncio.gather(*(guarded(job) for job in jobs))
        for _ in range(agent_probes):  # one run at a time per attacker thread
            a = rng.choice(attackers)
            await _agent_probe(p, a, rng.choice(victims), random.Random(rng.random()))
    finally:
        for a in attackers:
            await a.client.aclose()

    # Nothing of the victims changed: threads, the waiting approval, runs, memory.
    for v in victims:
        async with live_server.client(v.token) as c:
            statuses = [(await c.get(f"/api/v1/threads/{t}")).json()["status"] for t in v.threads]
            assert statuses == ["active", "archived", "active"], statuses
            trash = (await c.get("/api/v1/trash")).json()["threads"]
            assert [t["thread_id"] for t in trash] == [v.trashed], trash
            for run_id in v.runs:
                run = (await c.get(f"/api/v1/runs/{run_id}")).json()
                assert not run["cancel_requested"], run
            waiting = (await c.get(f"/api/v1/runs/{v.interrupted}")).json()
            assert waiting["status"] == "interrupted", waiting
            for t in v.threads:
                detail = (await c.get(f"/api/v1/threads/{t}")).json()
                assert {m["message_id"] for m in detail["messages"]} <= set(v.messages)
        assert hashlib.sha256(memory_file(container, v.uid).read_bytes()).hexdigest() == (
            v.memory_sha
        )

    total = sum(p.kinds.values())
    report(
        "R6 tenancy",
        probes=total,
        agent_probes=agent_probes,
        victims=VICTIMS,
        attackers=ATTACKERS,
        markers=sum(len(v.markers) for v in victims),
        failures=len(p.failures),
        foreign_bytes=sum(1 for f in p.failures if "foreign bytes" in f),
        bytes_scanned=p.bytes_scanned,
        seed=seed,
        kinds=dict(sorted(p.kinds.items())),
    )
    assert total >= probes_wanted + agent_probes
    assert p.failures == [], "\n".join(p.failures[:20])
