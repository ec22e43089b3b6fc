"""Looking back in the browser (issue 34 §3), on a desktop (1280x800) and a phone (390x844):

* the history tools' cards read like answers: each hit or thread is its title as a link, a time
  in words and its text, with no 32-hex thread id anywhere in the cards' or the reply's visible
  text; the JSON the model saw stays under Details; the same after a reload (stored tool calls);
* a hit's link opens its thread in the app (no page load) at the message, marked;
* a link to a thread deleted since says so, and the open thread stays;
* times read as words in the browser's locale (today / yesterday / a date).

Each test ends with ``ui.assert_clean()``: no script error, no console error, no CSP violation.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from tests.browser.conftest import UI, send, tool_event, wait_idle
from tests.browser.screens import review_shot
from tests.support.server import LiveServer, create_user_with_token, login_link
from yuxi.bootstrap import Container

pytestmark = pytest.mark.browser

VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
#: A server thread id: what must never show in the text a person reads.
HEX_ID = re.compile(r"[0-9a-f]{32}")
#: How the ISO times of the API look; the cards show times in words instead.
ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


@pytest.fixture(params=list(VIEWPORTS))
def viewport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def screen(page: Any, viewport: str, name: str) -> None:
    await review_shot(page, f"lookback-{VIEWPORTS[viewport]['width']}-{name}")


async def sign_in(
    live_server: LiveServer, container: Container, ui: UI, name: str, viewport: str
) -> httpx.AsyncClient:
    uid, token = await create_user_with_token(container, name)
    api = live_server.client(token)
    assert (await api.put("/api/v1/me/config", json={"enable_memory": True})).status_code == 200
    await ui.page.set_viewport_size(VIEWPORTS[viewport])
    await ui.page.goto(await login_link(live_server, container, uid))
    await expect(ui.page.get_by_test_id("user-name")).to_have_text(name)
    return api


async def in_sidebar(page: Any, viewport: str) -> None:
    """On a phone the thread list is a drawer: open it first."""
    if viewport == "phone" and not await page.get_by_test_id("sidebar").is_visible():
        await page.get_by_test_id("threads-toggle").click()
        await expect(page.get_by_test_id("sidebar")).to_be_visible()


async def titled_thread(api: httpx.AsyncClient, title: str, text: str) -> str:
    """A thread holding ``text`` (and the offline model's reply), renamed to ``title``."""
    thread_id = str((await api.post("/api/v1/threads", json={})).json()["thread_id"])
    run = await api.post(f"/api/v1/threads/{thread_id}/runs?wait=true", json={"input": text})
    assert run.status_code == 200 and run.json()["status"] == "completed", run.text
    renamed = await api.patch(f"/api/v1/threads/{thread_id}", json={"title": title})
    assert renamed.status_code == 200, renamed.text
    return thread_id


async def visible_text(locator: Any) -> str:
    """What a person reads: the rendered text (a closed <details> shows its summary only)."""
    texts = await locator.evaluate_all("(nodes) => nodes.map((n) => n.innerText)")
    return "\n".join(texts)


async def assert_no_ids_in_prose(page: Any) -> None:
    cards = page.locator('[data-testid="tool-event"]')
    replies = page.get_by_test_id("assistant-reply")
    for text in (await visible_text(cards), await visible_text(replies)):
        assert HEX_ID.search(text) is None, text
        assert ISO_TIME.search(text) is None, text


async def check_search_card(page: Any, heron: str) -> Any:
    card = tool_event(page, "search_thread_messages").last
    await expect(card).to_have_attribute("data-status", "success")
    await expect(card.get_by_test_id("tool-summary")).to_have_text(
        "Searched your past conversations for «heron»"
    )
    hit = card.locator(f'[data-testid="history-hit"][data-thread-id="{heron}"][data-role="user"]')
    link = hit.get_by_test_id("history-link")
    await expect(link).to_have_text("Heron walks")
    assert (await link.get_attribute("href") or "").startswith(f"#thread={heron}&message=")
    await expect(hit.get_by_test_id("history-time")).to_have_text(re.compile(r"^today, "))
    await expect(hit.get_by_test_id("history-snippet")).to_contain_text("heron")
    await expect(hit.get_by_test_id("search-mark").first).to_have_text(re.compile("^heron$", re.I))
    # the message after the hit in its thread (the offline model's echo), dimmed below it
    await expect(hit.get_by_test_id("hit-after")).to_have_text(
        "Yuxi: You said: my old note: a grey heron nests by the mill"
    )
    await expect(hit.get_by_test_id("hit-before")).to_have_count(0)  # the thread's first
    # the JSON the model saw is one click away, ids and all
    raw = card.get_by_test_id("tool-result-text")
    await expect(raw).to_be_hidden()
    await card.get_by_test_id("tool-details").locator("summary").click()
    await expect(raw).to_contain_text(f'"thread_id": "{heron}"')
    await card.get_by_test_id("tool-details").locator("summary").click()
    return hit


async def check_list_card(page: Any, titles: dict[str, str]) -> Any:
    card = tool_event(page, "list_threads").last
    await expect(card).to_have_attribute("data-status", "success")
    # the asking thread is left out: only the others are listed
    await expect(card.get_by_test_id("history-thread")).to_have_count(len(titles))
    for thread_id, title in titles.items():
        item = card.locator(f'[data-testid="history-thread"][data-thread-id="{thread_id}"]')
        await expect(item.get_by_test_id("history-link")).to_have_text(title)
        await expect(item.get_by_test_id("history-time")).to_have_text(re.compile(r"^today, "))
        await expect(item).to_contain_text("2 messages")
    return card


async def test_history_cards_read_like_answers_and_their_links_open_threads(
    live_server: LiveServer, container: Container, ui: UI, viewport: str
) -> None:
    page = ui.page
    api = await sign_in(live_server, container, ui, "iris", viewport)
    heron = await titled_thread(api, "Heron walks", "my old note: a grey heron nests by the mill")
    kettle = await titled_thread(api, "Kitchen jobs", "my old note: descale the kettle monthly")
    await page.reload()
    await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    await page.evaluate("window.__sameDocument = true")  # gone after any page load

    await in_sidebar(page, viewport)
    await page.get_by_test_id("new-thread").click()
    await send(page, "search history: heron")
    await wait_idle(page)
    await check_search_card(page, heron)
    reply = page.get_by_test_id("assistant-reply").last
    await expect(reply).to_contain_text("«Heron walks»")
    await tool_event(page, "search_thread_messages").last.scroll_into_view_if_needed()
    await screen(page, viewport, "search-card")
    await send(page, "recent threads")
    await wait_idle(page)
    await check_list_card(page, {heron: "Heron walks", kettle: "Kitchen jobs"})
    await expect(page.get_by_test_id("assistant-reply").last).to_contain_text("«Kitchen jobs»")
    # a read: the thread's title as the link, its messages by who said them
    await send(page, f"read thread: {heron}")
    await wait_idle(page)
    read = tool_event(page, "read_thread_messages").last
    await expect(read).to_have_attribute("data-status", "success")
    await expect(read.get_by_test_id("tool-summary")).to_have_text("Read a past conversation")
    await expect(read.get_by_test_id("history-link")).to_have_text("Heron walks")
    await expect(read.get_by_test_id("history-message")).to_have_text(
        [
            "You: my old note: a grey heron nests by the mill",
            "Yuxi: You said: my old note: a grey heron nests by the mill",
        ]
    )
    await expect(page.get_by_test_id("assistant-reply").last).to_contain_text(
        "Thread «Heron walks»:"
    )
    await assert_no_ids_in_prose(page)
    await screen(page, viewport, "cards-live")
    await ui.shot("cards-live")

    # the same cards from the stored tool calls after a reload
    await page.reload()
    await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    await page.evaluate("window.__sameDocument = true")
    hit = await check_search_card(page, heron)
    await check_list_card(page, {heron: "Heron walks", kettle: "Kitchen jobs"})
    await assert_no_ids_in_prose(page)
    searching = page.get_by_test_id("thread-title")
    here = await searching.text_content()

    # a hit's link opens its thread in the app, at the message, marked
    await hit.get_by_test_id("history-link").click()
    await expect(page.get_by_test_id("thread-title")).to_have_text("Heron walks")
    marked = page.locator('[data-testid="message"][data-highlighted="true"]')
    await expect(marked).to_have_count(1)
    await expect(marked).to_contain_text("a grey heron nests by the mill")
    await expect(marked).to_be_in_viewport()
    assert await page.evaluate("window.__sameDocument") is True
    await screen(page, viewport, "hit-opened")

    # back in the searching thread, a link to a thread deleted since says so; nothing moves
    await in_sidebar(page, viewport)
    await page.get_by_test_id("thread-item").filter(has_text=here or "").click()
    await expect(page.get_by_test_id("thread-title")).to_have_text(here or "")
    assert (await api.delete(f"/api/v1/threads/{kettle}")).status_code == 204
    card = tool_event(page, "list_threads").last
    gone = card.locator(f'[data-testid="history-thread"][data-thread-id="{kettle}"]')
    await gone.get_by_test_id("history-link").click()
    await expect(page.get_by_test_id("error-text")).to_have_text(
        "That thread was deleted: restore it from the trash (while it is there) to open it."
    )
    await expect(gone.get_by_test_id("thread-link-gone")).to_have_text("(deleted)")
    await expect(gone.get_by_test_id("history-link")).not_to_have_attribute("href", re.compile("."))
    await expect(page.get_by_test_id("thread-title")).to_have_text(here or "")
    assert await page.evaluate("window.__sameDocument") is True
    await screen(page, viewport, "deleted-link")

    # a thread archived since opens in the Archived view, restorable, its box shut
    assert (await api.post(f"/api/v1/threads/{heron}/archive")).status_code == 200
    await (
        tool_event(page, "search_thread_messages").last.get_by_test_id("history-link").first.click()
    )
    await expect(page.get_by_test_id("thread-title")).to_have_text("Heron walks")
    await expect(page.get_by_test_id("thread-archived-note")).to_be_visible()
    await expect(page.get_by_test_id("restore-thread")).to_be_visible()
    await expect(page.get_by_test_id("message-input")).to_be_disabled()
    await in_sidebar(page, viewport)
    await expect(page.get_by_test_id("archived-toggle")).to_have_attribute("aria-pressed", "true")
    assert await page.evaluate("window.__sameDocument") is True
    await api.aclose()
    ui.assert_clean()


async def test_times_read_as_words_and_search_words_are_marked(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    page = ui.page
    api = await sign_in(live_server, container, ui, "tomo", "desktop")
    words = await page.evaluate(
        """async () => {
          const { humanTime } = await import('./static/when.js');
          const now = new Date(2026, 2, 10, 12, 0);  // local time, 10 Mar 2026
          return {
            today: humanTime(new Date(2026, 2, 10, 9, 30).toISOString(), now),
            yesterday: humanTime(new Date(2026, 2, 9, 23, 59).toISOString(), now),
            older: humanTime(new Date(2026, 2, 3, 9, 30).toISOString(), now),
            bad: humanTime('not a time', now),
          };
        }"""
    )
    assert words["today"].startswith("today, ") and "9:30" in words["today"]
    assert words["yesterday"].startswith("yesterday, ")
    assert "Mar" in words["older"] and "2026" in words["older"] and "3" in words["older"]
    assert ISO_TIME.search(words["older"]) is None
    assert words["bad"] == ""
    # the marks of a search: its words, simple forms of them, CJK two-character pieces
    marked = await page.evaluate(
        """async () => {
          const { markRanges } = await import('./static/marks.js');
          const cut = (text, query) => markRanges(text, query).map(([a, b]) => text.slice(a, b));
          return {
            forms: cut('She painted; he paints. A painter? Team tea, TEAS.', 'paint tea'),
            cjk: cut('我喜欢乌龙茶，也喝绿茶。乌龙', '乌龙茶'),
            width: cut('ＨＥＲＯＮ and heron', 'heron'),
            none: cut('nothing here', '!!!'),
          };
        }"""
    )
    assert marked["forms"] == ["painted", "paints", "painter", "tea", "TEAS"]
    assert marked["cjk"] == ["乌龙茶", "乌龙"]
    assert marked["width"] == ["ＨＥＲＯＮ", "heron"]
    assert marked["none"] == []
    await api.aclose()
    ui.assert_clean()


# -- the search box over the thread list ----------------------------------------------------------


def hits(page: Any) -> Any:
    return page.get_by_test_id("search-hit")


async def search_for(page: Any, query: str) -> None:
    box = page.get_by_test_id("thread-search-input")
    await box.fill(query)
    await box.press("Enter")


async def test_search_box_finds_messages_in_other_threads_and_opens_them(
    live_server: LiveServer, container: Container, ui: UI, viewport: str
) -> None:
    page = ui.page
    uid, token = await create_user_with_token(container, "sora")
    api = live_server.client(token)  # memory stays off: the owner's search does not need it
    heron = await titled_thread(api, "Heron walks", "my old note: a grey heron nests by the mill")
    kettle = await titled_thread(api, "Kitchen <b>jobs</b>", "descale the kettle monthly")
    hidden = await api.patch(f"/api/v1/threads/{kettle}", json={"recall_excluded": True})
    assert hidden.status_code == 200, hidden.text
    await titled_thread(api, "Today", "nothing to find here")
    await ui.page.set_viewport_size(VIEWPORTS[viewport])
    await page.goto(await login_link(live_server, container, uid))
    await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    await expect(page.get_by_test_id("thread-title")).to_have_text("Today")
    searches: list[str] = []
    page.on("request", lambda r: searches.append(r.url) if "/api/v1/search?" in r.url else None)

    # typing waits for a pause: one request for the whole word
    await in_sidebar(page, viewport)
    box = page.get_by_test_id("thread-search-input")
    await box.click()
    await page.keyboard.type("heron", delay=40)
    await expect(hits(page)).to_have_count(2)
    assert len(searches) == 1 and "q=heron" in searches[0], searches
    await expect(page.get_by_test_id("thread-list")).to_be_hidden()
    status = page.get_by_test_id("thread-search-status")
    await expect(status).to_have_text("2 messages match «heron».")
    mine = page.locator('[data-testid="search-hit"][data-role="user"]')
    await expect(mine.get_by_test_id("history-link")).to_have_text("Heron walks")
    await expect(mine.get_by_test_id("history-time")).to_have_text(re.compile(r"^today, "))
    await expect(mine.get_by_test_id("search-mark")).to_have_text(["heron"])
    # the message after the hit, dimmed below it (the server's neighbour)
    await expect(mine.get_by_test_id("hit-after")).to_contain_text(
        "Yuxi: You said: my old note: a grey heron"
    )
    assert HEX_ID.search(await visible_text(page.get_by_test_id("thread-search"))) is None
    await screen(page, viewport, "search-hits")
    await ui.shot("search-hits")

    # a hit opens its thread at the message; on a phone the drawer closes
    await mine.get_by_test_id("history-link").click()
    await expect(page.get_by_test_id("thread-title")).to_have_text("Heron walks")
    marked = page.locator('[data-testid="message"][data-highlighted="true"]')
    await expect(marked).to_contain_text("my old note: a grey heron nests by the mill")
    await expect(marked).to_be_in_viewport()
    if viewport == "phone":
        await expect(page.get_by_test_id("sidebar")).to_be_hidden()
    assert heron in page.url
    await screen(page, viewport, "search-opened")

    # a thread hidden from recall is still the owner's to search; its title stays text
    await in_sidebar(page, viewport)
    await search_for(page, "kettle")
    await expect(hits(page)).to_have_count(2)
    await expect(hits(page).first.get_by_test_id("history-link")).to_have_text(
        "Kitchen <b>jobs</b>"
    )
    assert await page.locator("#thread-search b").count() == 0

    # a newer query wins over an older one still on its way
    async def slow(route: Any) -> None:
        await asyncio.sleep(1.5)
        with contextlib.suppress(Exception):  # the page aborted it: that is the point
            await route.continue_()

    await page.route(re.compile(r".*/api/v1/search\?q=heron.*"), slow)
    await search_for(page, "heron")
    await search_for(page, "kettle")
    await expect(status).to_have_text("2 messages match «kettle».")
    await page.wait_for_timeout(2000)  # the slow answer would have landed by now
    await expect(status).to_have_text("2 messages match «kettle».")
    await expect(hits(page).first.get_by_test_id("history-link")).to_have_text(
        "Kitchen <b>jobs</b>"
    )
    await page.unroute(re.compile(r".*/api/v1/search\?q=heron.*"))

    # nothing found, then a query the server refuses: its own words under the box
    await search_for(page, "zebra")
    await expect(status).to_have_text("No messages match «zebra».")
    await expect(hits(page)).to_have_count(0)
    refused = await api.get("/api/v1/search", params={"q": "?!…"})
    assert refused.status_code == 400, refused.text
    reason = refused.json()["error"]["message"]
    await search_for(page, "?!…")
    error = page.get_by_test_id("thread-search-error")
    await expect(error).to_have_text(reason)
    await expect(status).to_be_hidden()
    await screen(page, viewport, "search-refused")

    # Escape clears the box and brings the thread list back (the drawer stays open)
    await box.press("Escape")
    await expect(box).to_have_value("")
    await expect(error).to_be_hidden()
    await expect(page.get_by_test_id("thread-list")).to_be_visible()
    await expect(page.get_by_test_id("thread-item")).to_have_count(3)
    await api.aclose()
    ui.assert_clean()


async def test_a_history_answer_cut_to_the_events_size_says_so_and_keeps_its_start(
    live_server: LiveServer, container: Container, ui: UI
) -> None:
    """A read can be 64 KiB; the event carries 16 KiB of it, which is not JSON any more: the card
    says so instead of drawing half a list, and the cut text stays under Details."""
    page = ui.page
    api = await sign_in(live_server, container, ui, "yuki", "desktop")
    long_thread = str((await api.post("/api/v1/threads", json={})).json()["thread_id"])
    for n in range(3):  # three messages of 9,000 bytes: 8 KiB each in the read, 24 KiB in all
        text = f"part {n}: " + "茶" * 2_996
        run = await api.post(f"/api/v1/threads/{long_thread}/runs?wait=true", json={"input": text})
        assert run.status_code == 200 and run.json()["status"] == "completed", run.text
    await page.reload()
    await expect(page.get_by_test_id("transcript")).to_have_attribute("data-ready", "true")
    await page.get_by_test_id("new-thread").click()
    await send(page, f"read thread: {long_thread}")
    await wait_idle(page)
    card = tool_event(page, "read_thread_messages").last
    await expect(card).to_have_attribute("data-status", "success")
    await expect(card.get_by_test_id("history-unreadable")).to_have_text(
        "This answer is too long to show here: its start is under Details."
    )
    await expect(card.get_by_test_id("history-answer")).to_have_count(0)
    await card.get_by_test_id("tool-details").locator("summary").click()
    await expect(card.get_by_test_id("tool-result")).to_contain_text("Result (truncated)")
    await expect(card.get_by_test_id("tool-result-text")).to_contain_text("part 0: 茶茶")
    await api.aclose()
    ui.assert_clean()
