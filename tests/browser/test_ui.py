"""The web UI in a real headless Chromium against a real ``yuxi serve``, PostgreSQL and the
offline model: sign-in, the memory switch, streamed replies with visible tool events, the Memory
panel (edit, ETag conflict, clear) and approve/reject of sensitive tool calls.

Screenshots of every step land in ``artifacts/browser/``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import UI, send, tool_event, wait_idle
from tests.support.server import LiveServer, create_user_with_token, login_link
from yuxi.bootstrap import Container

pytestmark = pytest.mark.browser

MEMORY = "/api/v1/workspace/files/agents/MEMORY.md"


async def test_sign_in_memory_panel_and_recall_in_a_new_thread(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    _, token = await create_user_with_token(container, "alice")
    page = ui.page
    api = live_server.client(token)

    # -- sign in with the token ------------------------------------------------------------
    await page.goto(live_server.base_url + "/")
    await expect(page.get_by_test_id("token-input")).to_be_visible()
    await ui.shot("sign-in")
    await page.get_by_test_id("token-input").fill("not-a-valid-token")
    await page.get_by_test_id("sign-in").click()
    await expect(page.get_by_test_id("signin-error")).to_contain_text("not accepted")
    await page.get_by_test_id("token-input").fill(token)
    await page.get_by_test_id("sign-in").click()
    await expect(page.get_by_test_id("user-name")).to_have_text("alice")
    assert await page.evaluate("localStorage.getItem('yuxi.token')") == token
    await expect(page.get_by_test_id("thread-item")).to_have_count(0)
    await ui.shot("signed-in")

    # -- the memory switch is bound to /me/config -------------------------------------------
    toggle = page.get_by_test_id("memory-toggle")
    await expect(toggle).not_to_be_checked()
    async with page.expect_response(
        lambda r: r.url.endswith("/api/v1/me/config") and r.request.method == "PUT"
    ) as put:
        await toggle.click()
    assert (await put.value).ok
    await expect(toggle).to_be_checked()
    await expect(toggle).to_be_enabled()
    await expect(page.get_by_test_id("memory-state")).to_have_text("on")
    assert (await api.get("/api/v1/me/config")).json() == {"enable_memory": True}
    await ui.shot("memory-on")

    # -- remember: a streamed reply and a visible tool event --------------------------------
    await send(page, "remember: I drink oolong tea")
    user_msg = page.locator('[data-testid="message"][data-role="user"]')
    await expect(user_msg).to_have_count(1)
    await expect(user_msg.get_by_test_id("message-text")).to_have_text(
        "remember: I drink oolong tea"
    )
    card = tool_event(page, "remember_memory")
    await expect(card).to_have_count(1)
    await expect(card).to_have_attribute("data-status", "success")
    await expect(card.get_by_test_id("tool-status")).to_have_text("success")
    await expect(card.get_by_test_id("tool-args")).to_contain_text("I drink oolong tea")
    result = card.get_by_test_id("tool-result")
    await expect(result.get_by_test_id("tool-result-text")).to_be_hidden()  # collapsed
    await result.locator("summary").click()
    await expect(result.get_by_test_id("tool-result-text")).to_contain_text('"status": "updated"')
    reply = page.locator('[data-testid="message"][data-role="assistant"]').get_by_test_id(
        "assistant-reply"
    )
    await expect(reply).to_have_count(1)
    await expect(reply).to_contain_text("Saved to memory: «I drink oolong tea»")
    # The settled run says what it cost (the run view's usage): a tool call and the answer.
    await expect(page.get_by_test_id("run-usage")).to_contain_text("2 model calls")
    await wait_idle(page)
    await expect(page.get_by_test_id("thread-item")).to_have_count(1)
    await expect(page.get_by_test_id("thread-item")).to_contain_text("remember: I drink oolong tea")
    await ui.shot("remembered")

    # -- the Memory panel shows the file; edit and save (If-Match) --------------------------
    await page.get_by_test_id("memory-panel-button").click()
    await expect(page.get_by_test_id("memory-entry-text")).to_have_text(["I drink oolong tea"])
    await page.get_by_test_id("memory-tab-raw").click()
    text = page.get_by_test_id("memory-text")
    await expect(text).to_have_value("I drink oolong tea\n")
    await ui.shot("memory-panel")
    await text.click()
    await text.press("Control+End")
    await page.keyboard.type("I take it without sugar\n")
    await page.get_by_test_id("memory-save").click()
    await expect(page.get_by_test_id("memory-status")).to_contain_text("Saved")
    edited = "I drink oolong tea\nI take it without sugar\n"
    assert (await api.get(MEMORY)).text == edited
    await ui.shot("memory-saved")

    # -- a stale save is refused (412) with a clear message and a Reload ---------------------
    current = await api.get(MEMORY)
    changed = edited + "Green tea on Sundays\n"
    behind = await api.put(
        MEMORY, content=changed.encode(), headers={"If-Match": current.headers["etag"]}
    )
    assert behind.status_code == 204
    await text.fill(edited + "a stale edit\n")
    await page.get_by_test_id("memory-save").click()
    conflict = page.get_by_test_id("memory-conflict")
    await expect(conflict).to_be_visible()
    await expect(conflict).to_contain_text("changed since you loaded it")
    await expect(page.get_by_test_id("memory-conflict-mine")).to_have_value(
        edited + "a stale edit\n"
    )
    await expect(page.get_by_test_id("memory-conflict-theirs")).to_have_value(changed)
    assert (await api.get(MEMORY)).text == changed  # nothing overwritten
    await ui.shot("memory-conflict")
    await page.get_by_test_id("memory-conflict-take-theirs").click()
    await expect(text).to_have_value(changed)
    await expect(conflict).to_be_hidden()
    await ui.shot("memory-reloaded")

    # -- a new thread can use the edited memory ---------------------------------------------
    await page.get_by_test_id("new-thread").click()  # a draft: created by its first message
    selected = page.locator('[data-testid="thread-item"][aria-current="true"]')
    await expect(selected).to_have_count(0)
    await expect(page.get_by_test_id("tool-event")).to_have_count(0)
    await send(page, "what do you remember?")
    await expect(page.get_by_test_id("thread-item")).to_have_count(2)
    await expect(selected).to_contain_text("what do you remember?")
    recall = page.get_by_test_id("assistant-reply").last
    await expect(recall).to_contain_text("I take it without sugar")
    await expect(recall).to_contain_text("I drink oolong tea")
    await expect(recall).to_contain_text("Green tea on Sundays")
    await wait_idle(page)
    await expect(page.get_by_test_id("tool-event")).to_have_count(0)
    await ui.shot("recall-in-new-thread")

    # -- reopening the first thread replays its tool event from history ---------------------
    await page.get_by_test_id("thread-item").filter(has_text="remember: I drink").click()
    await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    await expect(tool_event(page, "remember_memory")).to_have_attribute("data-status", "success")
    await expect(tool_event(page, "remember_memory").get_by_test_id("tool-args")).to_contain_text(
        "I drink oolong tea"
    )
    await expect(page.locator('[data-testid="message"]')).to_have_count(2)
    await ui.shot("history-replayed")

    # -- Clear writes an empty file; the switch turns off again ----------------------------
    await page.get_by_test_id("memory-clear").click()
    await page.get_by_test_id("confirm-ok").click()
    await expect(page.get_by_test_id("memory-status")).to_contain_text("Cleared")
    await expect(text).to_have_value("")
    assert (await api.get(MEMORY)).text == ""
    await toggle.click()
    await expect(toggle).not_to_be_checked()
    await expect(page.get_by_test_id("memory-off-note")).to_be_visible()
    await expect(toggle).to_be_enabled()
    assert (await api.get("/api/v1/me/config")).json() == {"enable_memory": False}
    await ui.shot("cleared-and-off")

    # -- sign out forgets the token ---------------------------------------------------------
    await page.get_by_test_id("sign-out").click()
    await expect(page.get_by_test_id("token-input")).to_be_visible()
    assert await page.evaluate("localStorage.getItem('yuxi.token')") is None
    await api.aclose()
    ui.assert_clean()


async def test_approval_card_approve_and_reject(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    uid, token = await create_user_with_token(container, "bob")
    page = ui.page
    api = live_server.client(token)

    # a login link: its single-use code is removed from the address bar and exchanged for a
    # session token, which is what the page remembers (never the link's code)
    link = await login_link(live_server, container, uid)
    await page.goto(link)
    await expect(page.get_by_test_id("user-name")).to_have_text("bob")
    assert "login" not in page.url
    session = await page.evaluate("localStorage.getItem('yuxi.token')")
    assert session not in (None, token) and session not in link
    assert await container.services.users.authenticate(session) == uid
    await ui.shot("signed-in-from-link")

    await send(page, "write file notes/a.md: hi")
    card = page.get_by_test_id("approval-card")
    await expect(card).to_be_visible()
    await expect(card.get_by_test_id("approval-tool")).to_have_text("write_workspace_file")
    await expect(card.get_by_test_id("approval-summary")).to_contain_text("notes/a.md")
    await expect(card.get_by_test_id("approval-summary")).to_contain_text('"hi"')
    # the arguments are in the tool card just above: the approval card only sums them up
    assert await card.locator("pre, [data-testid='approval-args']").count() == 0
    tool = tool_event(page, "write_workspace_file")
    await expect(tool).to_have_attribute("data-status", "pending")
    await expect(page.get_by_test_id("send")).to_be_disabled()
    assert (await api.get("/api/v1/workspace/files/notes/a.md")).status_code == 404
    await ui.shot("approval-card")

    # a reload while waiting rebuilds the card from the interrupted run
    await page.reload()
    await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    await expect(card).to_have_count(1)
    await expect(card.get_by_test_id("approval-tool")).to_have_text("write_workspace_file")
    await expect(tool).to_have_attribute("data-status", "pending")
    await expect(page.get_by_test_id("send")).to_be_disabled()
    await ui.shot("approval-card-after-reload")

    await card.get_by_test_id("approve").click()
    await expect(tool).to_have_count(1)
    await expect(tool).to_have_attribute("data-status", "success")
    await expect(card).to_have_attribute("data-state", "approved")
    await expect(card).to_contain_text("Approved")
    await expect(page.get_by_test_id("assistant-reply").last).to_contain_text(
        "Wrote notes/a.md (2 bytes)."
    )
    await wait_idle(page)
    # once the resumed run has finished, the card says so (not "resuming" forever)
    await expect(card).to_have_attribute("data-outcome", "completed")
    await expect(card.get_by_test_id("approval-status")).to_have_text(
        "Approved — the file was written."
    )
    await expect(card).not_to_contain_text("resuming")
    await expect(page.get_by_test_id("send")).to_be_enabled()
    got = await api.get("/api/v1/workspace/files/notes/a.md")
    assert got.status_code == 200 and got.text == "hi"
    await ui.shot("approved")

    # a reload restores the session and the thread, with the tool event from history
    await page.reload()
    await expect(page.get_by_test_id("user-name")).to_have_text("bob")
    await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    await expect(tool_event(page, "write_workspace_file")).to_have_attribute(
        "data-status", "success"
    )
    # the decision stays in the transcript (the thread view's decisions), not a pending card
    decided = page.get_by_test_id("approval-card")
    await expect(decided).to_have_count(1)
    await expect(decided).to_have_attribute("data-state", "approved")
    await expect(decided.get_by_test_id("approval-status")).to_have_text(
        "Approved — the file was written."
    )
    await expect(decided.get_by_test_id("approve")).to_have_count(0)
    await ui.shot("reloaded")

    # reject: nothing is written
    await send(page, "write file notes/b.md: no thanks")
    card_b = page.locator('[data-testid="approval-card"][data-state="pending"]')
    await expect(card_b).to_be_visible()
    await expect(card_b.get_by_test_id("approval-summary")).to_contain_text("notes/b.md")
    await ui.shot("second-approval-card")
    await card_b.get_by_test_id("reject").click()
    rejected = page.locator('[data-testid="approval-card"][data-state="rejected"]')
    await expect(rejected).to_have_count(1)
    await wait_idle(page)
    await expect(rejected).to_have_attribute("data-outcome", "completed")
    await expect(rejected.get_by_test_id("approval-status")).to_have_text(
        "Rejected — the file was not written."
    )
    cards = tool_event(page, "write_workspace_file")
    await expect(cards).to_have_count(2)
    await expect(cards.nth(1)).not_to_have_attribute("data-status", "pending")
    await expect(cards.nth(1)).not_to_have_attribute("data-status", "running")
    assert (await api.get("/api/v1/workspace/files/notes/b.md")).status_code == 404
    await expect(page.get_by_test_id("send")).to_be_enabled()
    await ui.shot("rejected")
    await api.aclose()
    ui.assert_clean()


async def test_stream_reconnects_with_last_event_id_and_text_is_escaped(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    uid, _ = await create_user_with_token(container, "carol")
    page = ui.page
    seen: list[dict[str, str | None]] = []

    async def cut_first_stream(route: Any) -> None:
        """The first connection to a run's events drops after two frames, before the run
        settles; later ones pass through. The UI must resume from Last-Event-ID."""
        headers = route.request.headers
        seen.append({"url": route.request.url, "last_event_id": headers.get("last-event-id")})
        if len(seen) > 1:
            await route.continue_()
            return
        upstream = await route.fetch()
        body = await upstream.text()
        frames = [f for f in body.replace("\r\n", "\n").split("\n\n") if f.strip()]
        await route.fulfill(
            status=200,
            headers={"content-type": "text/event-stream", "cache-control": "no-store"},
            body="\n\n".join(frames[:2]) + "\n\n",
        )

    await page.route("**/api/v1/runs/*/events", cut_first_stream)
    await page.goto(await login_link(live_server, container, uid))
    await expect(page.get_by_test_id("user-name")).to_have_text("carol")

    hostile = '<img src=x onerror="window.__xss=1"> <b>bold</b> & "quotes"'
    await send(page, hostile)
    reply = page.get_by_test_id("assistant-reply")
    await expect(reply).to_have_count(1)
    await wait_idle(page)
    assert len(seen) >= 2, seen
    assert seen[0]["last_event_id"] is None
    assert seen[1]["last_event_id"] == "2", seen
    # the reconnect neither lost nor duplicated anything
    await expect(page.locator('[data-testid="message"][data-role="assistant"]')).to_have_count(1)
    await page.unroute("**/api/v1/runs/*/events")

    user_text = page.locator('[data-testid="message"][data-role="user"]').get_by_test_id(
        "message-text"
    )
    await expect(user_text).to_have_text(hostile)
    await expect(page.get_by_test_id("thread-item")).to_contain_text("<img")
    assert await page.locator("#transcript img, #transcript b, #thread-list img").count() == 0
    assert await page.evaluate("window.__xss") is None
    await ui.shot("escaped-after-reconnect")

    # the SSE parser itself: CRLF split across chunks, comments, multi-line data, no tail
    frames = await page.evaluate(
        """() => {
          const out = [];
          const p = new window.YuxiSse.SseParser((f) => out.push(f));
          for (const chunk of ['id: 1\\r', '\\nevent: tok', 'en\\r\\ndata: {"a"', ':1}\\r\\n\\r\\n',
                               ': ping\\r\\n\\r\\n', 'data: l1\\ndata:l2\\n\\n',
                               'id: 7\\revent: x\\rdata: cr\\r\\r', 'data: unfinished']) {
            p.push(chunk);
          }
          p.end();
          return out;
        }"""
    )
    assert frames == [
        {"id": "1", "event": "token", "data": '{"a":1}'},
        {"id": "1", "event": "message", "data": "l1\nl2"},
        {"id": "7", "event": "x", "data": "cr"},
    ], json.dumps(frames)
    ui.assert_clean()


async def test_history_tool_cards_come_from_the_thread_view_without_replaying_runs(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    uid, token = await create_user_with_token(container, "dave")
    page = ui.page
    api = live_server.client(token)
    assert (await api.put("/api/v1/me/config", json={"enable_memory": True})).status_code == 200

    await page.goto(await login_link(live_server, container, uid))
    await expect(page.get_by_test_id("user-name")).to_have_text("dave")
    await send(page, "remember: I like green tea")
    await expect(tool_event(page, "remember_memory")).to_have_attribute("data-status", "success")
    await wait_idle(page)
    await send(page, "read file: notes/missing.md")
    await expect(tool_event(page, "read_workspace_file")).to_have_attribute("data-status", "error")
    await wait_idle(page)
    await ui.shot("live")

    # reload: the history is drawn from GET /threads/{id} alone, no run's events are replayed
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    async with page.expect_response(
        lambda r: "/api/v1/threads/" in r.url and r.request.method == "GET"
    ) as thread_view:
        await page.reload()
    await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    detail = await (await thread_view.value).json()
    calls = [c for m in detail["messages"] for c in m["tool_calls"]]
    assert [(c["name"], c["status"]) for c in calls] == [
        ("remember_memory", "success"),
        ("read_workspace_file", "error"),
    ]

    remembered = tool_event(page, "remember_memory")
    await expect(remembered).to_have_count(1)
    await expect(remembered).to_have_attribute("data-status", "success")
    await expect(remembered.get_by_test_id("tool-name")).to_have_text("remember_memory")
    await expect(remembered.get_by_test_id("tool-status")).to_have_text("success")
    await expect(remembered.get_by_test_id("tool-args")).to_contain_text("I like green tea")
    await remembered.get_by_test_id("tool-result").locator("summary").click()
    await expect(remembered.get_by_test_id("tool-result-text")).to_contain_text(
        '"status": "updated"'
    )
    failed = tool_event(page, "read_workspace_file")
    await expect(failed).to_have_count(1)
    await expect(failed).to_have_attribute("data-status", "error")
    await expect(failed.get_by_test_id("tool-status")).to_have_text("error")
    await expect(failed.get_by_test_id("tool-args")).to_contain_text("notes/missing.md")
    await expect(failed.get_by_test_id("tool-error")).to_be_visible()
    # tool results live in their cards, not in bubbles of their own: 2 user + 2 replies
    await expect(page.locator('[data-testid="message"]')).to_have_count(4)
    await expect(page.locator('[data-testid="message"][data-role="tool"]')).to_have_count(0)
    await ui.shot("history-from-thread-view")

    assert [u for u in requests if "/events" in u] == [], requests

    # the one store is read-only outside its actions (the same module instance as the app's)
    refused = await page.evaluate(
        """async () => {
          const { state } = await import('./static/state.js');
          try { state.threadId = 'elsewhere'; } catch (e) { return [e.name, state.threadId]; }
          return ['written', state.threadId];
        }"""
    )
    assert refused == ["TypeError", detail["thread_id"]], refused
    await api.aclose()
    ui.assert_clean()
