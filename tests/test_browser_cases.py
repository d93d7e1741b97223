"""The case library and insights pages in a real browser against a real server.

One server subprocess (``python -m server`` over a private copy of the fixture runbooks) and the
worker's headless Chromium; the tests run in order: empty pages first, then pages over
recorded runs. ``SHOTS_DIR=/some/dir`` saves a 1280x800 screenshot of each page there.
"""

from __future__ import annotations

import contextlib
import os
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

QUESTIONS = ["Redis OOM command not allowed 怎么处理？", "ERR_TIMEOUT 是什么意思？"]
L1_QUESTION = "How do I fix a database connection pool timeout?"  # fills the similarity chart
CHARTS = ("timeline", "relevance", "dedup", "similarity", "evidence", "latency")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("browser-cases"))
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
async def page(browser: Browser, server: Server) -> AsyncIterator[Page]:
    async with checked_page(browser, server) as pg:
        yield pg


async def shot(page: Page, name: str, *, full_page: bool = False) -> None:
    folder = os.environ.get("SHOTS_DIR")
    if folder:
        await page.wait_for_timeout(800)  # let a smooth scroll settle
        await page.evaluate("window.scrollTo(0, 0)")
        await page.screenshot(path=str(Path(folder) / name), full_page=full_page)


def api(server: Server) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, timeout=120)


async def test_empty_pages_say_so(page: Page) -> None:
    await page.goto("/insights")
    await expect(page.get_by_test_id("insight-body").get_by_test_id("empty-state")).to_be_visible()
    assert await page.locator("canvas").count() == 0  # no empty axes
    await shot(page, "insights-empty.png")
    await page.goto("/cases")
    await expect(page.get_by_test_id("case-table").get_by_test_id("empty-state")).to_contain_text(
        "有用"
    )


async def test_every_page_links_cases_and_insights(page: Page, server: Server) -> None:
    for path in ("/", "/documents", "/sessions", "/retrieval", "/cases", "/insights"):
        await page.goto(path)
        await expect(page.get_by_test_id("nav-cases")).to_have_attribute("href", "/cases")
        await expect(page.get_by_test_id("nav-insights")).to_have_attribute("href", "/insights")
        await expect(page.locator('a[aria-current="page"]')).to_have_count(1)
    await page.get_by_test_id("nav-cases").click()
    await expect(page).to_have_url(f"{server.base_url}/cases")


async def test_cases_page_lists_searches_and_opens_a_case(page: Page, server: Server) -> None:
    with api(server) as c:
        sids = [c.post("/api/chat", json={"question": q}).json()["sessionId"] for q in QUESTIONS]
        case_ids = [
            c.post("/api/feedback", json={"sessionId": s, "feedback": "useful"}).json()["caseId"]
            for s in sids
        ]
    await page.goto("/cases")
    rows = page.get_by_test_id("case-row")
    await expect(rows).to_have_count(2)
    await expect(rows.first).to_contain_text("ERR_TIMEOUT")  # newest first

    await page.get_by_test_id("case-search").fill("oom command")  # any letter case
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_have_attribute("data-case-id", case_ids[0])
    await page.get_by_test_id("case-search").fill("没有这样的案例")
    await expect(page.get_by_test_id("empty-state")).to_contain_text("没有这样的案例")
    await page.get_by_test_id("case-search").fill("")
    await expect(rows).to_have_count(2)

    await rows.nth(1).get_by_test_id("case-open").click()
    detail = page.get_by_test_id("case-detail")
    await expect(detail.get_by_test_id("case-problem")).to_contain_text("Redis OOM")
    await expect(detail.get_by_test_id("case-solution")).not_to_be_empty()
    link = detail.get_by_test_id("case-session-link")
    await expect(link).to_have_attribute("href", f"/sessions#{sids[0]}")
    await shot(page, "cases.png")

    await detail.get_by_test_id("case-retract").click()  # retract from the page
    await page.get_by_test_id("confirm-ok").click()
    await expect(detail.get_by_test_id("case-retracted")).to_contain_text("case removed")
    await expect(rows).to_have_count(1)
    with api(server) as c:
        assert c.get(f"/api/cases/{case_ids[0]}").status_code == 404
        assert c.get(f"/api/sessions/{sids[0]}").json()["session"]["feedback"] == "not_useful"
    await page.goto(f"/cases#{case_ids[0]}")  # an old link says the case is gone
    await expect(detail.get_by_test_id("case-detail-error")).to_contain_text("case_not_found")


async def test_insights_page_draws_every_chart_with_the_api_numbers(
    page: Page, server: Server
) -> None:
    with api(server) as c:
        assert c.post("/api/chat", json={"question": L1_QUESTION}).status_code == 200
        data = c.get("/api/insights").json()
    assert data["lookups"] > 0 and not data["empty"]
    await page.goto("/insights")
    for name in CHARTS:
        await expect(page.get_by_test_id(f"chart-{name}-canvas")).to_be_visible()
    await expect(page.get_by_test_id("kpi-sessions")).to_have_text(
        str(data["feedback"]["sessions"])
    )
    await expect(page.get_by_test_id("kpi-lookups")).to_have_text(str(data["lookups"]))
    drawn: dict[str, Any] = await page.evaluate(
        """(names) => Object.fromEntries(names.map((n) => {
            const canvas = document.querySelector(`[data-testid="chart-${n}-canvas"]`);
            const chart = window.Chart.getChart(canvas);
            return [n, {
                width: canvas.width,
                data: chart.data.datasets.map((d) => d.data),
                labels: chart.data.labels,
            }];
        }))""",
        list(CHARTS),
    )
    for name, chart in drawn.items():
        assert chart["width"] > 200, name  # laid out, not collapsed
    total = lambda xs: sum(x or 0 for x in xs)  # noqa: E731
    assert total(drawn["relevance"]["data"][0]) == data["lookups"]
    assert drawn["relevance"]["labels"][0].split()[0] == data["relevanceLevels"][0]["key"]
    assert total(drawn["timeline"]["data"][0]) == data["feedback"]["sessions"]
    assert total(drawn["timeline"]["data"][1]) == data["lookups"]
    assert total(drawn["similarity"]["data"][0]) == sum(b["count"] for b in data["similarity"])
    assert total(drawn["evidence"]["data"][0]) == data["feedback"]["sessions"]
    assert drawn["latency"]["data"][0] == [t["p50Ms"] for t in data["toolLatency"]]
    # Pixels, not only a config: the relevance canvas has coloured bars painted.
    painted = await page.evaluate(
        """() => {
            const c = document.querySelector('[data-testid="chart-relevance-canvas"]');
            const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let coloured = 0;
            for (let i = 0; i < px.length; i += 4) {
                if (px[i + 3] > 0 && Math.abs(px[i] - px[i + 2]) > 60) coloured++;
            }
            return coloured;
        }"""
    )
    assert painted > 500
    await shot(page, "insights.png")
    await shot(page, "insights-full.png", full_page=True)

    await page.get_by_test_id("insight-range").select_option("24")
    await expect(page.get_by_test_id("insight-span")).to_contain_text("小时")
    await expect(page.get_by_test_id("chart-relevance-canvas")).to_be_visible()


async def test_cases_and_insights_with_content_fit_a_phone(page: Page) -> None:
    await page.set_viewport_size({"width": 375, "height": 740})
    for path, ready in (("/cases", "case-row"), ("/insights", "chart-relevance-canvas")):
        await page.goto(path)
        await expect(page.get_by_test_id(ready).first).to_be_visible()
        await page.wait_for_load_state("networkidle")
        extra = await page.evaluate(
            "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
            " - window.innerWidth"
        )
        assert extra <= 0, f"{path} scrolls sideways by {extra}px at 375px"
