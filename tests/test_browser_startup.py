"""The console during a first start: every page shows a banner with the first import's progress
(per file, and per chunk batch while files are embedded) and drops it when the import is done; the
same banner says so while a damaged vector store is rebuilt at start-up."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.browser import browser_marks, chromium
from tests.support.kb import copy_fixture_kb
from tests.support.processes import Server, start_server
from tests.test_background_import import big_runbook
from tests.test_vector_store_repair import segments, truncate

with contextlib.suppress(ImportError):  # browser_marks() skips the module with a hint
    from playwright.async_api import expect

pytestmark = browser_marks()
SHOTS = Path(os.environ.get("SUPERBIZ_SHOTS", "/work/notes/shots"))


def _with_big_runbook(work: Path) -> None:
    kb = copy_fixture_kb(work / "knowledge_base")
    (kb / "ops").mkdir()
    (kb / "ops" / "shards.md").write_text(big_runbook(100), encoding="utf-8")


@pytest.fixture
def importing_server(tmp_path: Path) -> Iterator[Server]:
    _with_big_runbook(tmp_path)
    srv = start_server(tmp_path, healthy=False)  # returns once it serves: importing
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def repairing_server(tmp_path: Path) -> Iterator[Server]:
    _with_big_runbook(tmp_path)
    start_server(tmp_path, name="first").stop()  # imported, then stopped
    truncate(segments(tmp_path)[0])  # its vector store damaged meanwhile
    srv = start_server(tmp_path, healthy=False)  # serves while it rebuilds (re-embeds the big one)
    try:
        yield srv
    finally:
        srv.stop()


def _shot(name: str) -> str | None:
    return str(SHOTS / name) if SHOTS.parent.is_dir() else None


async def test_pages_show_the_first_import_then_drop_it(importing_server: Server) -> None:
    if _shot("x"):
        SHOTS.mkdir(parents=True, exist_ok=True)
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1280, "height": 800})
        await page.goto(f"{importing_server.base_url}/documents")
        banner = page.get_by_test_id("startup-banner")
        await expect(banner).to_be_visible(timeout=20_000)
        await expect(banner).to_contain_text("首次导入知识库")
        progress = page.get_by_test_id("startup-progress")
        await expect(progress).to_contain_text("个文件")
        await expect(progress).to_contain_text("个 chunk", timeout=60_000)  # a batch is embedding
        if path := _shot("first-import-documents.png"):
            await page.screenshot(path=path)
        chat = await browser.new_page(viewport={"width": 1280, "height": 800})
        await chat.goto(f"{importing_server.base_url}/")
        await expect(chat.get_by_test_id("startup-banner")).to_be_visible(timeout=20_000)
        if path := _shot("first-import-chat.png"):
            await chat.screenshot(path=path)
        await expect(banner).to_be_hidden(timeout=240_000)  # the import ended: the banner goes
        await expect(page.get_by_test_id("status-count-INDEXED")).to_have_text("7", timeout=20_000)
        await expect(page.get_by_test_id("health")).to_contain_text("ok")
        if path := _shot("first-import-done-documents.png"):
            await page.screenshot(path=path)


async def test_pages_show_a_vector_store_repair_then_drop_it(repairing_server: Server) -> None:
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1280, "height": 800})
        await page.goto(f"{repairing_server.base_url}/")
        banner = page.get_by_test_id("startup-banner")
        await expect(banner).to_be_visible(timeout=20_000)
        await expect(banner).to_contain_text("正在修复向量库")
        await expect(banner).to_contain_text("milvus.db.damaged-")  # where the files went
        await expect(banner).to_be_hidden(timeout=240_000)  # rebuilt: the banner goes
        await expect(page.get_by_test_id("health")).to_contain_text("ok")
