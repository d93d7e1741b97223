"""The operator console in a real browser against a real server.

One server subprocess for the module (``python -m server`` over a private copy of the fixture
runbooks) and the worker's headless Chromium (``conftest.browser``). Needs Debian's Chromium
(``apt-get install chromium``) and the Playwright Python package; skips with that hint otherwise.
Never downloads a browser.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.browser import browser_marks, checked_page
from tests.support.processes import Server, start_server

with contextlib.suppress(ImportError):  # browser_marks() skips the module with a hint
    from playwright.async_api import Browser, Page, expect

pytestmark = browser_marks()

RUN_TIMEOUT_MS = 90_000  # one offline agent run, generous for a loaded CI machine
QUESTION = "ERR_TIMEOUT 是什么意思？"
PAGES = ["/", "/documents", "/sessions", "/retrieval"]


# ---- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("browser"))
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
async def page(browser: Browser, server: Server) -> AsyncIterator[Page]:
    async with checked_page(browser, server, height=900) as pg:
        yield pg


def api(server: Server) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, timeout=120)


async def ask(page: Page, question: str) -> Any:
    """Type a question, send it with Enter, wait for the streamed run to finish."""
    box = page.get_by_test_id("chat-input")
    await box.fill(question)
    await box.press("Enter")
    msg = page.get_by_test_id("message-assistant").last
    await expect(msg).to_have_attribute(
        "data-status", re.compile("done|error"), timeout=RUN_TIMEOUT_MS
    )
    await expect(msg).to_have_attribute("data-status", "done")
    return msg


# ---- pages and layout ---------------------------------------------------------------------------


async def test_every_page_has_nav_and_fits_a_phone(page: Page) -> None:
    await page.set_viewport_size({"width": 375, "height": 740})
    for path in PAGES:
        await page.goto(path)
        await expect(page.get_by_test_id("topnav")).to_be_visible()
        for name in ("chat", "documents", "sessions", "retrieval"):
            await expect(page.get_by_test_id(f"nav-{name}")).to_be_visible()
        await expect(page.locator('a[aria-current="page"]')).to_have_count(1)
        await expect(page.get_by_test_id("health")).to_contain_text("ok")
        await page.wait_for_load_state("networkidle")
        extra = await overflow(page)
        assert extra <= 0, f"{path} scrolls horizontally by {extra}px at 375px"


async def test_markdown_renderer_is_safe(page: Page) -> None:
    await page.goto("/")
    html = await page.evaluate(
        """async () => {
            const { renderMarkdown } = await import('/static/js/markdown.js');
            return renderMarkdown([
              '# 标题', '<script>alert(1)</script> <img src=x onerror=alert(1)>',
              '**bold** and `a<b>` [ok](https://example.com/x?a=1&b=2) [bad](javascript:alert(1))',
              '', '- one', '  - nested', '- two', '', '| a | b |', '|---|---|', '| 1 | 2 |',
              '', '```', '<b>code</b>', '```'].join('\\n'));
        }"""
    )
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;" in html
    assert "<h1>标题</h1>" in html and "<strong>bold</strong>" in html
    assert "<code>a&lt;b&gt;</code>" in html
    assert 'href="https://example.com/x?a=1&amp;b=2"' in html
    assert "javascript:" not in re.sub(r"\[bad\]\(javascript:alert\(1\)\)", "", html)
    assert "<ul><li>one<ul><li>nested</li></ul></li><li>two</li></ul>" in html
    assert "<table>" in html and "<td>2</td>" in html
    assert "<pre><code>&lt;b&gt;code&lt;/b&gt;</code></pre>" in html


# ---- chat ---------------------------------------------------------------------------------------


async def test_chat_streams_answer_trace_and_feedback(page: Page, server: Server) -> None:
    await page.goto("/")
    await expect(page.get_by_test_id("empty-state")).to_be_visible()
    # Record whether tokens were shown live, before the final Markdown replaced them. Streamed
    # text is a bare text node in the answer body (Markdown renders elements), and the mutation
    # records keep it even when a whole stream lands in one network chunk and the observer only
    # runs after the final render.
    await page.evaluate(
        """() => {
            window.__streamed = '';
            new MutationObserver((records) => {
              for (const r of records) {
                if (r.type !== 'childList' || r.target.dataset?.testid !== 'answer') continue;
                for (const n of r.addedNodes) {
                  if (n.nodeType === Node.TEXT_NODE && n.data.length > window.__streamed.length) {
                    window.__streamed = n.data;
                  }
                }
              }
            }).observe(document.body, { subtree: true, childList: true });
        }"""
    )
    msg = await ask(page, QUESTION)
    answer = msg.get_by_test_id("answer")
    await expect(answer).to_contain_text("api/payment-errors.md")
    await expect(answer.locator("strong").first).to_be_visible()  # rendered as Markdown
    assert "api/payment-errors.md" in await page.evaluate("window.__streamed"), (
        "tokens were not streamed live"
    )
    await expect(page.get_by_test_id("message-user").last).to_have_text(QUESTION)
    await expect(page.get_by_test_id("chat-input")).to_have_value("")

    session_id = await msg.get_attribute("data-session-id")
    assert session_id and re.fullmatch(r"[0-9a-f]{32}", session_id)
    await expect(msg.locator(".msg-head")).to_contain_text("CHAT")
    await expect(msg.locator(".msg-head")).not_to_contain_text("null")
    await expect(page.get_by_test_id("chat-stop")).to_be_hidden()
    await expect(page.get_by_test_id("chat-send")).to_be_enabled()

    # Trace drawer: live node/tool events with the relevance badge.
    drawer = msg.get_by_test_id("trace-drawer")
    await expect(drawer).to_be_hidden()
    toggle = msg.get_by_test_id("trace-toggle")
    await toggle.click()
    await expect(toggle).to_have_attribute("aria-expanded", "true")
    await expect(drawer).to_be_visible()
    await expect(drawer.locator('[data-kind="node"]').first).to_be_visible()
    await expect(drawer.locator('[data-kind="tool_call"]').first).to_contain_text(
        "lookup_knowledge"
    )
    badge = drawer.get_by_test_id("relevance-badge").first
    await expect(badge).to_have_text("PRECISE")
    await expect(drawer.get_by_test_id("trace-source").first).to_have_text("api/payment-errors.md")
    await expect(drawer.get_by_test_id("trace-domains").first).to_contain_text("api")
    await expect(drawer.get_by_test_id("session-link")).to_have_attribute(
        "href", f"/sessions#{session_id}"
    )

    # Feedback is bound to this message's session, shown and then locked.
    await msg.get_by_test_id("feedback-useful").click()
    await expect(msg.get_by_test_id("feedback-status")).to_contain_text("useful")
    await expect(msg.get_by_test_id("feedback-useful")).to_be_disabled()
    await expect(msg.get_by_test_id("feedback-not-useful")).to_be_disabled()
    with api(server) as c:
        assert c.get(f"/api/sessions/{session_id}").json()["session"]["feedback"] == "useful"

    # The conversation survives a reload (ids and messages live in localStorage).
    await page.reload()
    await expect(page.get_by_test_id("conversation-item")).to_have_count(1)
    kept = page.get_by_test_id("message-assistant").last
    await expect(kept.get_by_test_id("answer")).to_contain_text("api/payment-errors.md")
    await expect(kept.get_by_test_id("feedback-useful")).to_be_disabled()

    # Shift+Enter is a newline, not a send.
    box = page.get_by_test_id("chat-input")
    await box.fill("line one")
    await box.press("Shift+Enter")
    await box.type("line two")
    await expect(box).to_have_value("line one\nline two")
    await expect(page.get_by_test_id("message-user")).to_have_count(1)


async def test_aiops_report_streams_as_markdown(page: Page) -> None:
    await page.goto("/")
    await page.get_by_test_id("new-conversation").click()
    await page.get_by_test_id("aiops-button").click()
    msg = page.get_by_test_id("message-assistant").last
    await expect(msg).to_have_attribute("data-status", "done", timeout=RUN_TIMEOUT_MS)
    answer = msg.get_by_test_id("answer")
    await expect(answer.get_by_role("heading", name="活跃告警清单")).to_be_visible()
    await expect(answer.locator("table").first).to_be_visible()
    await expect(answer).to_contain_text("结论")
    await msg.get_by_test_id("trace-toggle").click()
    await expect(msg.locator('[data-kind="tool_result"]').first).to_be_visible()


async def test_chat_shows_http_and_stream_errors_inline(page: Page) -> None:
    # An HTTP error: the JSON {"error", "message"} body is shown in the message.
    await page.route(
        "**/api/ai_ops",
        lambda route: route.fulfill(
            status=503,
            content_type="application/json",
            body='{"error": "service_unavailable", "message": "a backing store is unreachable; retry shortly"}',
        ),
    )
    await page.goto("/")
    await page.get_by_test_id("aiops-button").click()
    msg = page.get_by_test_id("message-assistant").last
    await expect(msg).to_have_attribute("data-status", "error")
    await expect(msg.get_by_test_id("message-error")).to_contain_text(
        "a backing store is unreachable"
    )
    await expect(msg.get_by_test_id("message-error")).to_contain_text("503")

    # An `error` event ends the stream: shown inline, feedback still bound to that session.
    sse = (
        'event: session\ndata: {"sessionId": "s-err", "threadId": "t", "flow": "CHAT"}\n\n'
        'event: node\ndata: {"node": "classify"}\n\n'
        'event: error\ndata: {"sessionId": "s-err", "error": "RuntimeError: boom"}\n\n'
    )
    await page.route(
        "**/api/chat_stream",
        lambda route: route.fulfill(status=200, content_type="text/event-stream", body=sse),
    )
    box = page.get_by_test_id("chat-input")
    await box.fill("anything")
    await box.press("Enter")
    msg = page.get_by_test_id("message-assistant").last
    await expect(msg).to_have_attribute("data-status", "error")
    await expect(msg.get_by_test_id("message-error")).to_contain_text("RuntimeError: boom")
    await expect(msg).to_have_attribute("data-session-id", "s-err")


# ---- documents + retrieval ----------------------------------------------------------------------


async def test_upload_find_and_delete_a_document(
    page: Page, server: Server, tmp_path: Path
) -> None:
    keyword = "ZQXWBROWSERPROBE"
    title = "浏览器测试手册 Browser Probe Runbook"
    doc = tmp_path / "browser-probe.md"
    doc.write_text(
        "---\n"
        f'title: "{title}"\n'
        f"keywords:\n  - {keyword}\n  - browser probe\n"
        'summary: "A runbook uploaded by the browser test to check the console end to end."\n'
        "category: browsertest\n"
        "---\n\n"
        f"# {title}\n\n## 处理步骤\n\n1. 检查 {keyword} 的状态。\n2. 重启探针服务。\n",
        encoding="utf-8",
    )
    file_path = "browsertest/browser-probe.md"

    await page.goto("/documents")
    indexed = page.get_by_test_id("status-count-INDEXED")
    await expect(page.get_by_test_id("stats-line")).to_contain_text("篇文档")  # stats loaded
    before = int(await indexed.text_content() or "0")
    assert before >= 6  # the sample knowledge base

    # Client-side validation: a bad category never reaches the server.
    await page.get_by_test_id("upload-open").click()
    dialog = page.get_by_test_id("upload-dialog")
    await expect(dialog).to_be_visible()
    await page.get_by_test_id("upload-file").set_input_files(str(doc))
    await expect(page.get_by_test_id("upload-category")).to_have_value(
        "browsertest"
    )  # from frontmatter
    await page.get_by_test_id("upload-category").fill("Bad Category")
    await page.get_by_test_id("upload-submit").click()
    await expect(dialog.get_by_test_id("upload-error")).to_contain_text("小写")

    await page.get_by_test_id("upload-category").fill("browsertest")
    await page.get_by_test_id("upload-submit").click()
    await expect(dialog.get_by_test_id("upload-result")).to_contain_text("INDEXED", timeout=60_000)
    await expect(dialog.get_by_test_id("upload-result")).to_contain_text(file_path)

    # The same file again without "replace": the server's 409 message is shown inline.
    await page.get_by_test_id("upload-file").set_input_files(str(doc))
    await page.get_by_test_id("upload-category").fill("browsertest")
    await page.get_by_test_id("upload-submit").click()
    await expect(dialog.get_by_test_id("upload-error")).to_contain_text("409")
    await page.keyboard.press("Escape")
    await expect(dialog).to_be_hidden()

    row = page.locator(f'[data-testid="doc-row"][data-file-path="{file_path}"]')
    await expect(row.get_by_test_id("doc-status")).to_have_text("INDEXED")
    await expect(indexed).to_have_text(str(before + 1))

    # Search narrows the table; the status card filters.
    await page.get_by_test_id("doc-search").fill("browser-probe")
    await expect(page.get_by_test_id("doc-row")).to_have_count(1)
    await page.get_by_test_id("doc-search").fill("")
    await page.get_by_test_id("status-card-FAILED").click()
    await expect(page.get_by_test_id("status-card-FAILED")).to_have_attribute(
        "aria-pressed", "true"
    )
    await expect(page.get_by_test_id("empty-state")).to_contain_text("没有符合筛选条件")
    await page.get_by_test_id("status-card-FAILED").click()
    await expect(row).to_be_visible()

    # Detail panel with metadata and chunks; Escape closes it.
    await row.get_by_test_id("doc-open").click()
    detail = page.get_by_test_id("doc-detail")
    await expect(detail).to_be_visible()
    await expect(detail.get_by_test_id("detail-keywords")).to_contain_text(keyword)
    await expect(detail.get_by_test_id("detail-chunk").first).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(detail).to_be_hidden()

    # Retrieval test page: the frontmatter keyword is an exact L0 hit.
    await page.goto("/retrieval")
    await page.get_by_test_id("lookup-query").fill(keyword)
    await page.get_by_test_id("lookup-query").press("Enter")
    level = page.get_by_test_id("result-level").get_by_test_id("relevance-badge")
    await expect(level).to_have_attribute("data-level", "PRECISE")
    await expect(page.get_by_test_id("primary-source")).to_have_text(file_path)
    await expect(page.get_by_test_id("l0-title")).to_have_text([title])
    await expect(page.get_by_test_id("result-hint")).to_contain_text(
        "知识库中不存在比上述结果更精准的文档"
    )

    # A non-exact query goes to L1 and shows the per-route score table.
    await page.get_by_test_id("lookup-query").fill("payment gateway timeout retry idempotency")
    await page.get_by_test_id("lookup-submit").click()
    await expect(page.get_by_test_id("l1-row").first).to_be_visible()
    await expect(page.get_by_test_id("result-layer")).to_contain_text("L1")

    # Re-index from the table.
    await page.goto("/documents")
    row = page.locator(f'[data-testid="doc-row"][data-file-path="{file_path}"]')
    await row.get_by_test_id("doc-reindex").click()
    await expect(page.get_by_test_id("doc-action-ok")).to_contain_text("已重建索引")
    await expect(row.get_by_test_id("doc-status")).to_have_text("INDEXED")

    # Delete with confirmation; the row is gone.
    await row.get_by_test_id("doc-delete").click()
    confirm = page.get_by_test_id("confirm-dialog")
    await expect(confirm).to_contain_text(file_path)
    await page.get_by_test_id("confirm-cancel").click()  # cancelling keeps it
    await expect(row).to_be_visible()
    await row.get_by_test_id("doc-delete").click()
    await page.get_by_test_id("confirm-ok").click()
    await expect(page.get_by_test_id("doc-action-ok")).to_contain_text(file_path)
    await expect(row).to_have_count(0)
    await expect(indexed).to_have_text(str(before))
    with api(server) as c:
        assert c.get("/api/documents", params={"q": "browser-probe"}).json()["total"] == 0


async def test_reimport_shows_job_progress(page: Page) -> None:
    await page.goto("/documents")
    await page.get_by_test_id("reimport-open").click()
    dialog = page.get_by_test_id("reimport-dialog")
    await expect(dialog).to_be_visible()
    await page.get_by_test_id("reimport-start").click()  # not forced: nothing changed, quick
    await expect(dialog.get_by_test_id("job-status")).to_have_text("done", timeout=60_000)
    await expect(dialog.get_by_test_id("job-summary")).to_contain_text("total")
    await expect(page.get_by_test_id("reimport-start")).to_be_enabled()
    await page.keyboard.press("Escape")
    await expect(dialog).to_be_hidden()


# ---- sessions -----------------------------------------------------------------------------------


async def test_session_trace_and_replay_is_identical(page: Page, server: Server) -> None:
    with api(server) as c:
        r = c.post("/api/chat", json={"question": QUESTION})
        assert r.status_code == 200, r.text
        session_id = r.json()["sessionId"]

    await page.goto("/sessions")
    row = page.locator(f'[data-testid="session-row"][data-session-id="{session_id}"]')
    await expect(row.get_by_test_id("session-status")).to_have_text("SUCCESS")
    await row.get_by_test_id("session-open").click()
    await expect(page).to_have_url(re.compile(f"/sessions#{session_id}$"))

    detail = page.get_by_test_id("session-detail")
    await expect(detail.get_by_test_id("session-detail-id")).to_have_text(session_id)
    await expect(detail.get_by_test_id("session-query")).to_contain_text(QUESTION)
    await expect(detail.get_by_test_id("session-step").first).to_be_visible()
    inv = detail.get_by_test_id("session-invocation").first
    await expect(inv.get_by_test_id("invocation-tool")).to_have_text("lookup_knowledge")
    await expect(inv.get_by_test_id("relevance-badge")).to_have_text("PRECISE")
    await expect(detail.get_by_test_id("retrieval-details").first).to_be_attached()
    await expect(detail.get_by_test_id("checkpoint-row").first).to_be_visible()

    await detail.get_by_test_id("replay-button").click()
    report = detail.get_by_test_id("replay-report")
    await expect(report).to_have_attribute("data-identical", "true", timeout=RUN_TIMEOUT_MS)
    await expect(report).to_contain_text("identical")
    replay_link = report.get_by_test_id("replay-session-link")
    replay_id = (await replay_link.text_content() or "").strip()
    assert replay_id and replay_id != session_id

    # Time travel: re-run from the first (input) checkpoint as a new session.
    await detail.get_by_test_id("checkpoint-rerun").first.click()
    result = detail.get_by_test_id("checkpoint-result")
    await expect(result).to_contain_text("SUCCESS", timeout=RUN_TIMEOUT_MS)
    await expect(result).to_contain_text("api/payment-errors.md")

    # Filters narrow the list.
    await page.get_by_test_id("session-flow-filter").select_option("AI_OPS")
    await expect(row).to_have_count(0)
    await page.get_by_test_id("session-flow-filter").select_option("CHAT")
    await expect(row).to_be_visible()

    # Opening by URL hash works too (the chat page links here).
    await page.goto(f"/sessions#{replay_id}")
    await expect(page.get_by_test_id("session-detail-id")).to_have_text(replay_id)
    await expect(page.get_by_test_id("session-detail")).to_contain_text(session_id)  # "replay of"


async def overflow(page: Page) -> int:
    return await page.evaluate(
        "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth) - window.innerWidth"
    )


async def test_pages_with_content_fit_a_phone(page: Page) -> None:
    await page.set_viewport_size({"width": 375, "height": 740})
    await page.goto("/")
    msg = await ask(page, QUESTION)
    await msg.get_by_test_id("trace-toggle").click()
    assert await overflow(page) <= 0, "chat with an answer and an open trace scrolls sideways"
    session_id = await msg.get_attribute("data-session-id")

    await page.goto(f"/sessions#{session_id}")
    await expect(page.get_by_test_id("checkpoint-row").first).to_be_visible()
    await page.get_by_test_id("session-invocation").first.locator("details").last.click()
    assert await overflow(page) <= 0, "session detail scrolls sideways"

    await page.goto("/retrieval?q=" + "payment gateway timeout retry")
    await expect(page.get_by_test_id("l1-row").first).to_be_visible()
    assert await overflow(page) <= 0, "retrieval result scrolls sideways"

    await page.goto("/documents")
    await page.get_by_test_id("doc-open").first.click()
    await expect(page.get_by_test_id("detail-chunk").first).to_be_visible()
    assert await overflow(page) <= 0, "document detail scrolls sideways"


async def test_unknown_session_shows_the_servers_message(page: Page) -> None:
    await page.goto("/sessions#does-not-exist")
    err = page.get_by_test_id("session-error")
    await expect(err).to_contain_text("does not exist")
    await expect(err).to_contain_text("404")
