"""Offline answers as the console renders them: the Redis OOM answer and the AI-Ops report show
whole numbered steps, single bullets and no stray Markdown, in a real Chromium.

One server (``python -m server``) over the fixture runbooks plus the shipped Redis memory runbook.
Screenshots (1280x800) go to ``SHOTS_DIR`` when it is set, e.g. /work/notes/shots.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support.browser import browser_marks, checked_page
from tests.support.kb import copy_fixture_kb
from tests.support.paths import ROOT
from tests.support.processes import Server, start_server

with contextlib.suppress(ImportError):  # browser_marks() skips the module with a hint
    from playwright.async_api import Browser, Locator, Page, expect

pytestmark = browser_marks()

RUN_TIMEOUT_MS = 90_000
REDIS_OOM = "Redis OOM command not allowed 怎么处理？"
REDIS_RUNBOOK = "cache/redis-memory-full.md"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    work = tmp_path_factory.mktemp("answers")
    kb = copy_fixture_kb(work / "knowledge_base")
    (kb / "cache").mkdir(exist_ok=True)
    shutil.copy(ROOT / "knowledge_base" / REDIS_RUNBOOK, kb / REDIS_RUNBOOK)
    srv = start_server(work)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
async def page(browser: Browser, server: Server) -> AsyncIterator[Page]:
    async with checked_page(browser, server) as pg:
        yield pg


async def _screenshot(page: Page, name: str) -> None:
    if shots := os.environ.get("SHOTS_DIR"):
        Path(shots).mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(Path(shots) / name))


async def assert_clean(answer: Locator) -> None:
    """What an on-call engineer would trip over: Markdown left as text, doubled bullets, a step
    number inside a bullet (a step shown without the ones before it), an empty list item."""
    text = await answer.inner_text()
    assert "**" not in text and "- -" not in text, text
    items = await answer.locator("li").all_inner_texts()
    assert items, "the answer has no list"
    for item in items:
        assert item.strip(), "an empty list item"
        assert not re.match(r"^\s*[-*+]\s", item), f"doubled bullet: {item!r}"
    for item in await answer.locator("ul > li").all_inner_texts():
        assert not re.match(r"^\s*\d+[.)]\s", item), f"a step number in a bullet: {item!r}"


async def test_redis_oom_answer_shows_the_steps_whole(page: Page) -> None:
    await page.goto("/")
    box = page.get_by_test_id("chat-input")
    await box.fill(REDIS_OOM)
    await box.press("Enter")
    msg = page.get_by_test_id("message-assistant").last
    await expect(msg).to_have_attribute("data-status", "done", timeout=RUN_TIMEOUT_MS)
    answer = msg.get_by_test_id("answer")
    await assert_clean(answer)
    steps = answer.locator("ol").first.locator("li")
    assert await steps.count() >= 3, await answer.inner_html()
    texts = await steps.all_inner_texts()
    assert any("maxmemory" in t for t in texts), texts
    await expect(answer.locator("code").first).to_be_visible()  # commands and keys as code
    await msg.scroll_into_view_if_needed()
    await _screenshot(page, "i13-agent-redis-oom-answer.png")


async def test_aiops_report_redis_section_is_clean(page: Page) -> None:
    await page.goto("/")
    await page.get_by_test_id("new-conversation").click()
    await page.get_by_test_id("aiops-button").click()
    msg = page.get_by_test_id("message-assistant").last
    await expect(msg).to_have_attribute("data-status", "done", timeout=RUN_TIMEOUT_MS)
    answer = msg.get_by_test_id("answer")
    await assert_clean(answer)
    heading = answer.get_by_role("heading", name=re.compile("处理方案执行3：RedisMemoryUsageHigh"))
    await expect(heading).to_be_visible()
    steps = heading.locator("xpath=following-sibling::ol[1]/li")
    assert await steps.count() >= 2
    await heading.scroll_into_view_if_needed()
    await _screenshot(page, "i13-agent-aiops-redis-report.png")


async def test_aiops_report_opens_its_evidence_ledger(page: Page) -> None:
    await page.goto("/")
    await page.get_by_test_id("new-conversation").click()
    await page.get_by_test_id("aiops-button").click()
    msg = page.get_by_test_id("message-assistant").last
    await expect(msg).to_have_attribute("data-status", "done", timeout=RUN_TIMEOUT_MS)
    answer = msg.get_by_test_id("answer")
    assert "superbiz-ledger" not in await answer.inner_text()  # the JSON block is not shown
    ledger = answer.get_by_test_id("evidence-ledger")
    await expect(ledger).not_to_have_attribute("open", "")
    ref = answer.get_by_test_id("ledger-ref").first
    entry_id = await ref.get_attribute("data-entry")
    await ref.click()
    entry = ledger.locator(f'[data-entry="{entry_id}"]')
    await expect(entry).to_be_visible()
    await expect(entry).to_have_class(re.compile("active"))
    await expect(entry.get_by_test_id("ledger-call")).to_contain_text("query_prometheus_alerts")
    await _screenshot(page, "i19-aiops-ledger-chat.png")
    # the session page opens the same ledger, and an entry leads to its recorded tool call
    href = await msg.get_by_test_id("session-link").get_attribute("href")
    await page.goto(href or "/sessions")
    stored = page.get_by_test_id("session-answer")
    log_ref = stored.get_by_test_id("ledger-ref").nth(1)
    await log_ref.click()
    opened = stored.get_by_test_id("evidence-ledger").locator(".ledger-entry.active")
    await expect(opened).to_be_visible()
    call = opened.get_by_test_id("ledger-call")
    await call.click()
    key = (await call.inner_text()).split()[-1]
    await expect(page.locator(f'[data-call-key="{key}"]')).to_be_in_viewport()
    await _screenshot(page, "i19-aiops-ledger-session.png")


async def test_paths_in_commands_stay_code_and_citations_open_base_documents(page: Page) -> None:
    """Issue 19: ``jcmd 1 Thread.print > /tmp/threads-1.txt`` rendered as a citation link that
    opened "document deleted"; only the runbook itself is a citation."""
    await page.goto("/")
    box = page.get_by_test_id("chat-input")
    await box.fill("HikariCP 连接池满了，怎么查是谁占着连接？")
    await box.press("Enter")
    msg = page.get_by_test_id("message-assistant").last
    await expect(msg).to_have_attribute("data-status", "done", timeout=RUN_TIMEOUT_MS)
    answer = msg.get_by_test_id("answer")
    await expect(answer.locator("code", has_text="/tmp/threads-1.txt").first).to_be_visible()
    sources = await answer.get_by_test_id("citation").evaluate_all(
        "els => els.map(e => e.dataset.source)"
    )
    assert sources and set(sources) == {"infrastructure/mysql-connection-pool.md"}, sources
