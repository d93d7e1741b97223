"""The documents page in a real browser against a real server: upload with the seed's document
fields, filter by fault source, the detail with every chunk open and its token count, disable and
enable, and the header's document count following along."""

from __future__ import annotations

import contextlib
import os
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

KEYWORD = "ZQXMETAPROBE"
# Set to a folder outside the checkout to keep screenshots of the page (for review); unset in CI.
SHOTS_DIR = os.environ.get("SUPERBIZ_SHOTS_DIR")
FILE_PATH = "metatest/meta-probe.md"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("browser-docs"))
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
async def page(browser: Browser, server: Server) -> AsyncIterator[Page]:
    async with checked_page(browser, server) as pg:
        yield pg


async def shot(page: Page, name: str) -> None:
    if SHOTS_DIR:
        await page.screenshot(path=str(Path(SHOTS_DIR) / f"{name}.png"))


def lookup(server: Server, query: str) -> dict[str, Any]:
    with httpx.Client(base_url=server.base_url, timeout=60) as c:
        return c.post("/api/knowledge/lookup", json={"query": query}).json()


def probe(tmp_path: Path) -> Path:
    doc = tmp_path / "meta-probe.md"
    steps = "\n\n".join(
        f"{i}. 检查 {KEYWORD} 网关的连接池、重试次数和超时配置，确认支付回调在五分钟内恢复正常。"
        for i in range(1, 9)
    )
    doc.write_text(
        f"---\ntitle: 支付网关探针手册\nkeywords: [{KEYWORD}]\n"
        "summary: 浏览器测试上传的文档，检查文档元数据。\ncategory: metatest\n---\n\n"
        f"# 支付网关探针手册\n\n## 处理步骤\n\n{steps}\n",
        encoding="utf-8",
    )
    return doc


async def test_upload_with_metadata_filter_detail_and_disable(
    page: Page, server: Server, tmp_path: Path
) -> None:
    await page.goto("/documents")
    health = page.get_by_test_id("health")
    await expect(health).to_contain_text("docs")
    before = int((await health.text_content() or "").split(" docs")[0].split()[-1])

    # Upload with the seed's fields.
    await page.get_by_test_id("upload-open").click()
    dialog = page.get_by_test_id("upload-dialog")
    await page.get_by_test_id("upload-file").set_input_files(str(probe(tmp_path)))
    await expect(page.get_by_test_id("upload-category")).to_have_value("metatest")
    await page.get_by_test_id("upload-fault-source").fill("支付网关")
    await page.get_by_test_id("upload-api-name").fill("/api/pay/callback")
    await page.get_by_test_id("upload-version").fill("v2.1")
    await page.get_by_test_id("upload-chunk-size").fill("64")
    await page.get_by_test_id("upload-chunk-overlap").fill("50")  # more than half: refused here
    await page.get_by_test_id("upload-submit").click()
    await expect(dialog.get_by_test_id("upload-error")).to_contain_text("一半")
    await page.get_by_test_id("upload-chunk-overlap").fill("8")
    await shot(page, "documents-upload-metadata")
    await page.get_by_test_id("upload-submit").click()
    await expect(dialog.get_by_test_id("upload-result")).to_contain_text("INDEXED", timeout=60_000)
    # The header's document count follows the upload.
    await expect(health).to_contain_text(f"{before + 1} docs")
    await page.keyboard.press("Escape")

    row = page.locator(f'[data-testid="doc-row"][data-file-path="{FILE_PATH}"]')
    await expect(row.get_by_test_id("doc-fault-source")).to_have_text("支付网关")
    await expect(row.get_by_test_id("doc-version")).to_have_text("v2.1")

    # Filter by fault source (with the category): only this document is left.
    await page.get_by_test_id("doc-fault-source-filter").select_option("支付网关")
    await expect(page.get_by_test_id("doc-row")).to_have_count(1)
    await expect(page).to_have_url(re.compile(r"faultSource="))
    await page.get_by_test_id("doc-category-filter").select_option("metatest")
    await expect(page.get_by_test_id("doc-row")).to_have_count(1)
    await shot(page, "documents-filtered-by-fault-source")

    # Detail: the fields, and every chunk open with its token count.
    await row.get_by_test_id("doc-open").click()
    detail = page.get_by_test_id("doc-detail")
    meta = detail.get_by_test_id("detail-meta")
    for text in ("支付网关", "/api/pay/callback", "v2.1", "64 / 8 tokens"):
        await expect(meta).to_contain_text(text)
    chunks = detail.get_by_test_id("detail-chunk")
    assert await chunks.count() >= 3  # 64-token chunks: the body is cut into several
    await expect(chunks.nth(1).locator("pre")).to_be_visible()  # open, no click needed
    await expect(chunks.nth(1).get_by_test_id("chunk-tokens")).to_contain_text("tokens")
    assert KEYWORD in str(lookup(server, KEYWORD)["result"])
    await chunks.nth(1).scroll_into_view_if_needed()
    await shot(page, "documents-detail-chunks")

    # Disable from the detail: shown as disabled, gone from lookups, the header count drops.
    await detail.get_by_test_id("detail-toggle").click()
    await expect(detail.get_by_test_id("doc-disabled")).to_be_visible()
    await expect(row).to_have_attribute("data-enabled", "false")
    await expect(health).to_contain_text(f"{before} docs")
    await shot(page, "documents-detail-disabled")
    assert FILE_PATH not in str(lookup(server, KEYWORD))
    # Enable again from the table.
    await page.keyboard.press("Escape")
    await page.get_by_test_id("doc-clear-filters").click()
    await shot(page, "documents-list-disabled-row")
    await row.get_by_test_id("doc-toggle").click()
    await expect(row).to_have_attribute("data-enabled", "true")
    assert FILE_PATH in str(lookup(server, KEYWORD))

    await row.get_by_test_id("doc-delete").click()
    await page.get_by_test_id("confirm-ok").click()
    await expect(row).to_have_count(0)


async def test_the_status_cards_wait_for_the_stats_instead_of_showing_zero(page: Page) -> None:
    # A slow stats answer: the cards must not read "0 indexed" (an empty base) meanwhile.
    held: list[Any] = []
    holding = True

    async def hold(route: Any) -> None:
        if holding:
            held.append(route)
        else:
            await route.continue_()

    await page.route("**/api/knowledge/stats", hold)
    await page.goto("/documents")
    await expect(page.get_by_test_id("stats-line")).to_contain_text("正在加载统计")
    await expect(page.get_by_test_id("status-count-INDEXED")).to_have_text("…")
    holding = False
    for route in held:
        await route.continue_()
    await expect(page.get_by_test_id("stats-line")).to_contain_text("篇文档")
    assert int(await page.get_by_test_id("status-count-INDEXED").text_content() or "0") >= 6
