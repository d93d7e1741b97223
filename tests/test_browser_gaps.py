"""The knowledge-gap report after a scripted day, in a real browser: alerts that found no runbook,
questions answered "not found" (clustered), unused and old runbooks; "draft a runbook" opens the
draft in the upload form, and uploading it indexes it.

The day runs against a real server whose Prometheus is a stub serving ``/api/v1/alerts`` (the one
thing that cannot run here): two AI-Ops analyses of the same two alerts — one covered by an old
runbook uploaded first, one (Kafka) by none — and chat questions, two of them about a topic no
runbook covers."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.support.browser import browser_marks, checked_page
from tests.support.processes import Server, start_server
from tests.support.threaded_server import ThreadedServer

with contextlib.suppress(ImportError):  # browser_marks() skips the module with a hint
    from playwright.async_api import Browser, Page, expect

pytestmark = browser_marks()

KAFKA = "KafkaConsumerLagHigh"
REDIS = "RedisMemoryUsageHigh"
OLD_RUNBOOK = f"""---
title: Redis 内存告警（旧版）
keywords: [{REDIS}, Redis 内存满]
---
# Redis 内存告警

## 处理
1. 查看 used_memory 与 maxmemory。
2. 清理大 Key。
"""
QUESTIONS = [
    "Kafka 消费者组重平衡怎么配置",
    "如何配置 Kafka 消费者组重平衡",
    "ERR_TIMEOUT 是什么意思？",
]


def alert(name: str, service: str, summary: str) -> dict[str, Any]:
    return {
        "labels": {"alertname": name, "severity": "warning", "service": service},
        "annotations": {"summary": summary},
        "state": "firing",
        "activeAt": "2026-12-01T02:00:00Z",
        "value": "1",
    }


class Prometheus(ThreadedServer):
    def app(self) -> FastAPI:
        app = FastAPI()
        alerts = [
            alert(KAFKA, "order-consumer", "order-consumer 消费积压超过 10 万条"),
            alert(REDIS, "redis-cache", "Redis 内存使用率超过 90%"),
        ]

        @app.get("/api/v1/alerts")
        def alerts_route() -> dict[str, Any]:
            return {"status": "success", "data": {"alerts": alerts}}

        return app


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    prom = Prometheus().start()
    srv = start_server(
        tmp_path_factory.mktemp("browser-gaps"), PROMETHEUS_URL=f"http://127.0.0.1:{prom.port}"
    )
    try:
        yield srv
    finally:
        srv.stop()
        prom.stop()


def ai_ops(base: str) -> None:
    with httpx.stream("POST", f"{base}/api/ai_ops", json={}, timeout=600) as r:
        assert r.status_code == 200
        events = [line for line in r.iter_lines() if line.startswith("event:")]
    assert events[-1] == "event: done", events[-5:]


@pytest.fixture(scope="module")
def day(server: Server) -> dict[str, Any]:
    base = server.base_url
    up = httpx.post(
        f"{base}/api/documents/upload",
        files={"file": ("redis-memory-old.md", OLD_RUNBOOK.encode(), "text/markdown")},
        data={"category": "cache", "version": "2023-01-15"},
        timeout=300,
    )
    assert up.status_code == 201, up.text
    ai_ops(base)
    ai_ops(base)
    for q in QUESTIONS:
        r = httpx.post(f"{base}/api/chat", json={"question": q}, timeout=300)
        assert r.status_code == 200, r.text
    report = httpx.get(f"{base}/api/insights/gaps", timeout=60)
    assert report.status_code == 200, report.text
    return report.json()


def test_the_gap_report_after_a_day(day: dict[str, Any]) -> None:
    alerts = {g["key"]: g for g in day["alerts"]}
    assert KAFKA in alerts and REDIS not in alerts, day["alerts"]
    assert alerts[KAFKA]["count"] >= 2  # lookups; the evidence is one line per session
    assert (
        len({e["sessionId"] for e in alerts[KAFKA]["evidence"]})
        == 2
        == len(alerts[KAFKA]["evidence"])
    )
    kafka_questions = [g for g in day["questions"] if "Kafka" in g["key"]]
    assert len(kafka_questions) == 1, day["questions"]  # the two wordings are one cluster
    assert sorted(kafka_questions[0]["detail"]["variants"]) == sorted(QUESTIONS[:2])
    assert not any("ERR_TIMEOUT" in g["key"] for g in day["questions"])
    stale = {g["key"]: g for g in day["stale"]}
    assert "cache/redis-memory-old.md" in stale, day["stale"]
    assert stale["cache/redis-memory-old.md"]["detail"]["alerts"] == [REDIS]
    unused = {g["key"] for g in day["unused"]}
    assert "infrastructure/flyway-best-practices.md" in unused
    assert "cache/redis-memory-old.md" not in unused and "api/payment-errors.md" not in unused


@pytest.fixture
async def page(browser: Browser, server: Server) -> AsyncIterator[Page]:
    async with checked_page(browser, server, height=1400) as pg:
        yield pg


async def test_the_gaps_page_drafts_a_runbook_into_the_upload_form(
    page: Page, server: Server, day: dict[str, Any]
) -> None:
    await page.goto("/insights")
    # Scores on every page are cut, never rounded across a threshold (0.74999 is not 0.7500).
    cut = await page.evaluate(
        "import('/static/js/ui.js').then(m => [0.74999, 0.29, 0.5].map(v => m.fmtNum(v)))"
    )
    assert cut == ["0.7499", "0.2900", "0.5000"], cut
    row = page.get_by_test_id("gaps-alerts").locator(f'tr[data-key="{KAFKA}"]')
    await expect(row).to_be_visible()
    await expect(row).to_contain_text("NONE ×")
    await expect(page.get_by_test_id("gaps-questions")).to_contain_text("Kafka 消费者组重平衡")
    await expect(page.get_by_test_id("gaps-stale")).to_contain_text("2023-01-15")
    await expect(page.get_by_test_id("gaps-unused")).to_contain_text("flyway")
    folder = os.environ.get("SHOTS_DIR")
    if folder:
        await page.get_by_test_id("gaps").scroll_into_view_if_needed()
        await page.wait_for_timeout(500)
        await page.get_by_test_id("gaps").screenshot(
            path=str(Path(folder) / "insights-knowledge-gaps.png")
        )

    await row.get_by_test_id("gap-draft").click()
    await page.wait_for_url("**/documents#draft")
    dialog = page.get_by_test_id("upload-dialog")
    await expect(dialog).to_be_visible()
    draft = page.get_by_test_id("upload-draft")
    text = await draft.input_value()
    assert f'  - "{KAFKA}"' in text and "## Mitigation" in text, text
    assert "order-consumer" in text or "NONE" in text  # the evidence of the sessions
    await draft.fill(text.replace("TODO: the safe first step.", "扩容消费者实例。"))
    await page.get_by_test_id("upload-category").fill("messaging")
    if folder:
        await draft.evaluate("el => { el.scrollTop = 0; }")
        await dialog.screenshot(path=str(Path(folder) / "gap-draft-upload.png"))
    await page.get_by_test_id("upload-submit").click()
    await expect(page.get_by_test_id("upload-result")).to_contain_text(KAFKA, timeout=120_000)
    look = httpx.post(f"{server.base_url}/api/knowledge/lookup", json={"query": KAFKA}).json()
    assert look["result"]["found"] and "messaging/" in look["result"]["primary"]["source"], look
    assert "扩容消费者实例" in look["result"]["primary"]["content"] or look["result"]["supplement"]
