"""The console's search, retrieval-test settings, citations, step timings and icons in Chromium.

One server subprocess over a private copy of the fixture runbooks and the worker's headless
Chromium, as in ``test_browser.py``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Iterator
from datetime import date, timedelta
from typing import Any

import pytest

from tests.support.browser import browser_marks, checked_page
from tests.support.processes import Server, start_server

with contextlib.suppress(ImportError):  # browser_marks() skips the module with a hint
    from playwright.async_api import Browser, Page, expect

pytestmark = browser_marks()

RUN_TIMEOUT_MS = 90_000
L1_QUESTION = "database connection pool timeout"  # answered from L1: a cited chunk
EMOJI = re.compile("[\U0001f300-\U0001faff\u2600-\u27bf\u25a0-\u25ff]")
DURATION = re.compile(r"^\d+(\.\d)? (ms|s)$|^\d+ min \d+ s$")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("browser-console"))
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
async def page(browser: Browser, server: Server) -> AsyncIterator[Page]:
    async with checked_page(browser, server) as pg:
        yield pg


async def ask(page: Page, question: str) -> Any:
    box = page.get_by_test_id("chat-input")
    await box.fill(question)
    await box.press("Enter")
    msg = page.get_by_test_id("message-assistant").last
    await expect(msg).to_have_attribute(
        "data-status", re.compile("done|error"), timeout=RUN_TIMEOUT_MS
    )
    await expect(msg).to_have_attribute("data-status", "done")
    return msg


async def no_emoji(page: Page) -> None:
    text = await page.evaluate("document.body.innerText")
    assert not EMOJI.findall(text), f"emoji on {page.url}: {EMOJI.findall(text)}"


async def test_chat_icons_step_timings_and_a_citation_that_opens_its_chunk(page: Page) -> None:
    await page.goto("/")
    msg = await ask(page, L1_QUESTION)

    # Icons are inline SVG, not emoji.
    for testid, name in (("feedback-useful", "thumbs-up"), ("feedback-not-useful", "thumbs-down")):
        svg = msg.get_by_test_id(testid).locator(f'svg[data-icon="{name}"]')
        await expect(svg).to_be_visible()
        assert (await svg.bounding_box())["width"] > 8  # drawn, not an empty box
    await no_emoji(page)

    # Every step in the trace says how long it took.
    await msg.get_by_test_id("trace-toggle").click()
    drawer = msg.get_by_test_id("trace-drawer")
    nodes = drawer.locator('[data-kind="node"]')
    await expect(nodes.first).to_be_visible()
    assert await nodes.count() >= 2
    for i in range(await nodes.count()):
        await expect(nodes.nth(i).get_by_test_id("step-duration")).to_have_text(DURATION)
    tool = drawer.locator('[data-kind="tool_result"]').first
    await expect(tool.get_by_test_id("step-duration")).to_have_text(DURATION)
    domains = msg.get_by_test_id("trace-session-domains")
    await expect(domains).to_be_visible()
    await expect(domains).to_have_text(re.compile(r"retrievedDomainsThisSession: \S+"))

    # The cited path is a link; it opens that chunk, marked and scrolled into view.
    source = await drawer.get_by_test_id("trace-source").first.inner_text()
    link = msg.get_by_test_id("answer").locator(
        f'a[data-testid="citation"][data-source="{source}"]'
    )
    await expect(link.first).to_be_visible()
    chunk = await link.first.get_attribute("data-chunk")
    assert chunk and chunk.isdigit()
    await link.first.click()
    dialog = page.get_by_test_id("chunk-view")
    await expect(dialog).to_be_visible()
    cited = dialog.locator('[data-testid="chunk-view-chunk"][data-cited="true"]')
    await expect(cited).to_have_count(1)
    await expect(cited).to_have_attribute("data-index", chunk)
    await expect(cited).to_be_in_viewport()
    await expect(cited).to_contain_text("引用的片段")
    await page.keyboard.press("Escape")
    await expect(dialog).to_be_hidden()


async def test_empty_retrieved_domains_line_is_hidden(page: Page) -> None:
    await page.goto("/")
    msg = await ask(page, "qzxv wplk 是什么？")  # a lookup that finds nothing: no domains served
    await msg.get_by_test_id("trace-toggle").click()
    drawer = msg.get_by_test_id("trace-drawer")
    result = drawer.locator('[data-kind="tool_result"]').filter(has_text="lookup_knowledge")
    await expect(result.first).to_be_visible()
    await expect(result.first.get_by_test_id("relevance-badge")).to_have_text("NONE")
    await expect(msg.get_by_test_id("trace-session-domains")).to_be_hidden()
    text = await drawer.inner_text()
    assert "retrievedDomainsThisSession" not in text, text


async def test_sessions_search_by_text_and_date(page: Page) -> None:
    await page.goto("/")
    await ask(page, "ZQ_FIND_ME_77 ERR_TIMEOUT 是什么")
    await ask(page, "Redis 内存告警如何处理")
    await page.goto("/sessions")
    rows = page.get_by_test_id("session-row")
    await expect(rows).not_to_have_count(0)
    assert await rows.count() >= 2

    await page.get_by_test_id("session-search").fill("zq_find_me")
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_contain_text("ZQ_FIND_ME_77")
    await page.get_by_test_id("session-search").fill("payment-errors.md")  # in the answer
    await expect(rows.first).to_be_visible()
    await expect(rows.filter(has_text="Redis")).to_have_count(0)

    await page.get_by_test_id("session-search").fill("")
    tomorrow = (date.today() + timedelta(days=1)).isoformat()
    await page.get_by_test_id("session-from").fill(tomorrow)
    await expect(page.get_by_test_id("empty-state")).to_contain_text("没有符合条件的会话")
    await page.get_by_test_id("session-from").fill(date.today().isoformat())
    await expect(rows.filter(has_text="ZQ_FIND_ME_77")).to_have_count(1)

    # The recorded answer links its citation too; the session page shows step durations.
    await rows.filter(has_text="ZQ_FIND_ME_77").get_by_test_id("session-open").click()
    link = page.get_by_test_id("session-answer").get_by_test_id("citation").first
    await expect(link).to_have_attribute("data-source", "api/payment-errors.md")
    await link.click()
    await expect(page.get_by_test_id("chunk-view-chunk").first).to_be_visible()
    await no_emoji(page)


async def test_retrieval_controls_change_that_lookup_and_show_it(page: Page) -> None:
    await page.goto(f"/retrieval?q={L1_QUESTION}")
    docs = page.get_by_test_id("doc-row")
    await expect(page.get_by_test_id("applied-topK")).to_have_attribute("data-overridden", "false")
    await expect(page.get_by_test_id("result-domains")).to_have_text(
        re.compile(r"retrievedDomainsThisSession: \S+")  # shown only with something after it
    )
    shown_before = await page.locator('[data-testid="doc-row"][data-shown="true"]').count()
    assert shown_before > 1 and await docs.count() >= shown_before

    await page.locator("#lookup-overrides > summary").click()
    # one control per knob the server lists, showing the value it runs with
    await expect(page.get_by_test_id("ov-topK")).to_have_attribute("placeholder", "4")
    await expect(page.get_by_test_id("ov-maxL2Distance")).to_have_attribute("placeholder", "2")
    await page.get_by_test_id("ov-topK").fill("1")
    # an enum knob's options carry their labels (value stays the wire value)
    await expect(page.get_by_test_id("ov-judge").locator('option[value="dense"]')).to_have_text(
        "dense 相似度"
    )
    await page.get_by_test_id("ov-judge").select_option("dense")
    await page.get_by_test_id("ov-bm25Weight").fill("2")
    await page.get_by_test_id("lookup-submit").click()
    await expect(page.get_by_test_id("applied-topK")).to_have_attribute("data-overridden", "true")
    await expect(page.get_by_test_id("applied-topK")).to_contain_text("1")
    await expect(page.get_by_test_id("applied-judge")).to_contain_text("dense")
    await expect(page.get_by_test_id("result-judge")).to_have_text("dense")
    await expect(page.locator('[data-testid="doc-row"][data-shown="true"]')).to_have_count(1)
    await expect(page.get_by_test_id("applied-denseWeight")).to_have_attribute(
        "data-overridden", "false"
    )

    await page.get_by_test_id("ov-highlyRelevantThreshold").fill("1.5")
    await page.get_by_test_id("lookup-submit").click()
    await expect(page.get_by_test_id("lookup-error")).to_contain_text("highlyRelevantThreshold")

    await page.get_by_test_id("ov-reset").click()
    await expect(page.get_by_test_id("applied-judge")).to_contain_text("calibrated")
    await expect(page.locator('[data-testid="doc-row"][data-shown="true"]')).to_have_count(
        shown_before
    )
    await expect(page.get_by_test_id("result-found").locator("svg.icon")).to_be_visible()
    await no_emoji(page)
