"""Cross-site attacks from a real page in Chromium, and the console behind an API key.

A page served from another origin (another port on 127.0.0.1 = same site; localhost = another
site) makes the browser POST to the server with ``no-cors`` requests: an upload replacing a
runbook and a forced knowledge import. Nothing may change. A second server has API_KEY set; its
console must ask for the key, keep it for the tab and work once it is entered.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tests.support.browser import browser_marks
from tests.support.processes import Server, free_port, start_server

with contextlib.suppress(ImportError):  # browser_marks() skips the module with a hint
    from playwright.async_api import Browser, Page, expect

pytestmark = browser_marks()

KEY = "s3cret-key"
VICTIM = "api/payment-errors.md"

UPLOAD_PAGE = """<!doctype html><meta charset="utf-8"><title>cute cats</title>
<script>
  const fd = new FormData();
  fd.append("category", "api");
  fd.append("replace", "true");
  fd.append("file", new Blob(["# Owned\\n\\nattacker text\\n"], {type: "text/markdown"}),
            "payment-errors.md");
  window.attack = fetch("TARGET/api/documents/upload", {method: "POST", mode: "no-cors", body: fd})
    .then(() => "sent", (e) => "blocked: " + e);
</script>"""
INIT_PAGE = """<!doctype html><meta charset="utf-8"><title>cute dogs</title>
<body onload="document.forms[0].submit()">
<form method="POST" action="TARGET/api/knowledge/init?force=true"></form>"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("csrf-target"))
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    work = tmp_path_factory.mktemp("keyed")
    srv = start_server(work, name="keyed", API_KEY=KEY)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def attacker(server: Server) -> Iterator[int]:
    """Another web server (the "other site"), serving the attack pages; yields its port."""
    pages = {
        "/upload.html": UPLOAD_PAGE.replace("TARGET", server.base_url),
        "/init.html": INIT_PAGE.replace("TARGET", server.base_url),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = pages.get(self.path, "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


def _state(server: Server) -> tuple[str, dict[str, tuple[str, str]]]:
    """The victim file's hash and every document's (updatedAt, status)."""
    digest = hashlib.sha256((server.work / "knowledge_base" / VICTIM).read_bytes()).hexdigest()
    items = httpx.get(f"{server.base_url}/api/documents", params={"pageSize": 200}).json()["items"]
    return digest, {d["filePath"]: (d["updatedAt"], d["status"]) for d in items}


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"], ids=["same-site", "cross-site"])
async def test_a_page_on_another_origin_changes_nothing(
    browser: Browser, server: Server, attacker: int, host: str
) -> None:
    before = _state(server)
    ctx = await browser.new_context()
    try:
        page = await ctx.new_page()
        async with page.expect_request(lambda r: "/api/documents/upload" in r.url) as sent:
            await page.goto(f"http://{host}:{attacker}/upload.html")
        await sent.value  # the browser did send it …
        await page.evaluate("window.attack")  # … and the answer came (opaque, or blocked)
        async with page.expect_response(lambda r: "/api/knowledge/init" in r.url) as init:
            await page.goto(f"http://{host}:{attacker}/init.html")
        response = await init.value
        assert response.status == 403, await response.text()
        assert "auth.allowed-origins" in (await response.json())["message"]
    finally:
        await ctx.close()
    assert '"POST /api/documents/upload HTTP/1.1" 403' in server.log_tail(200)
    assert httpx.get(f"{server.base_url}/api/knowledge/stats").json()["importing"] is False
    assert _state(server) == before
    assert "Traceback" not in server.log_tail(200)


async def _console(browser: Browser, server: Server) -> tuple[Page, list[str]]:
    ctx = await browser.new_context(base_url=server.base_url)
    ctx.set_default_timeout(20_000)
    page = await ctx.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on(
        "console",
        lambda m: (
            problems.append(m.text)
            if m.type == "error" and "Failed to load resource" not in m.text
            else None
        ),
    )
    return page, problems


async def test_console_asks_for_the_key_and_then_works(
    browser: Browser, keyed_server: Server
) -> None:
    page, problems = await _console(browser, keyed_server)
    try:
        await page.goto("/documents")
        dialog = page.get_by_test_id("api-key-dialog")
        await expect(dialog).to_be_visible()
        await expect(page.get_by_test_id("api-key-reason")).to_contain_text("X-API-Key")
        await expect(page.get_by_test_id("doc-row")).to_have_count(0)

        await page.get_by_test_id("api-key-input").fill("wrong")
        await page.get_by_test_id("api-key-save").click()
        await expect(dialog).to_be_visible()  # asked again, saying why
        await expect(page.get_by_test_id("api-key-reason")).to_contain_text("does not match")

        await page.get_by_test_id("api-key-input").fill(KEY)
        await page.get_by_test_id("api-key-save").click()
        await expect(dialog).to_be_hidden()
        row = page.locator(f'[data-testid="doc-row"][data-file-path="{VICTIM}"]')
        await expect(row).to_be_visible()
        saved = page.get_by_test_id("api-key-button").locator('svg[data-icon="check"]')
        await expect(saved).to_have_attribute("aria-label", "已保存 saved")

        await page.reload()  # kept for the tab
        await expect(row).to_be_visible()
        await expect(dialog).to_be_hidden()

        await page.goto("/retrieval?q=ERR_TIMEOUT")  # a POST read, with the key
        badge = page.get_by_test_id("relevance-badge").first
        await expect(badge).to_have_attribute("data-level", "PRECISE")
    finally:
        await page.context.close()
    assert not problems, problems

    other, _ = await _console(browser, keyed_server)  # another tab does not have it
    try:
        await other.goto("/sessions")
        await expect(other.get_by_test_id("api-key-dialog")).to_be_visible()
    finally:
        await other.context.close()
