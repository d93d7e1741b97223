"""The evals page and the case export in a real browser against a real server.

One server (``python -m server`` over a copy of the fixture runbooks) and, beside it, a real
``python -m evals run`` in the same DATA_DIR (as an operator would run it next to a running
server); then the console lists that run, shows each scenario's checks with the reasons, links to
the sessions, and exports a case as a scenario from the case page.
``SHOTS_DIR=/some/dir`` saves screenshots there (docs/screenshots/ holds the committed ones).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from evals.loader import load_file
from tests.support.browser import browser_marks, checked_page
from tests.support.paths import ROOT
from tests.support.processes import Server, python_bin, server_env, start_server

with contextlib.suppress(ImportError):  # browser_marks() skips the module with a hint
    from playwright.async_api import Browser, Page, expect

pytestmark = browser_marks()
FIXTURE_EVALS = ROOT / "tests" / "fixtures" / "evals"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("browser-evals"))
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def eval_run(server: Server) -> dict[str, Any]:
    """``python -m evals run --suite local`` beside the running server, in its DATA_DIR."""
    folder = server.work / "evals" / "scenarios"
    folder.mkdir(parents=True, exist_ok=True)
    for path in FIXTURE_EVALS.glob("*.yaml"):
        shutil.copy(path, folder / path.name)
    env = server_env(server.work, int(server.base_url.rsplit(":", 1)[1]))
    out = server.work / "evals.json"
    proc = subprocess.run(
        [python_bin(), "-m", "evals", "run", "--suite", "local", "--json", str(out)],
        cwd=server.work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = json.loads(proc.stdout)
    assert printed == json.loads(out.read_text(encoding="utf-8"))
    assert "pass rate" in proc.stderr and "✗ answer_names" in proc.stderr  # the table, on stderr
    return printed


@pytest.fixture
async def page(browser: Browser, server: Server) -> AsyncIterator[Page]:
    async with checked_page(browser, server, height=900) as pg:
        yield pg


async def shot(page: Page, name: str, *, top: bool = False, full_page: bool = False) -> None:
    folder = os.environ.get("SHOTS_DIR")
    if folder:
        await page.wait_for_timeout(800)  # let a smooth scroll settle
        if top:
            await page.evaluate("window.scrollTo(0, 0)")
        await page.screenshot(path=str(Path(folder) / name), full_page=full_page)


async def test_the_evals_page_lists_the_run_and_each_scenarios_checks(
    page: Page, server: Server, eval_run: dict[str, Any]
) -> None:
    await page.goto("/evals")
    await expect(page.get_by_test_id("nav-evals")).to_have_attribute("aria-current", "page")
    row = page.get_by_test_id("eval-run-row").first
    await expect(row).to_have_attribute("data-run-id", eval_run["run_id"])
    total = eval_run["results"]
    await expect(row.get_by_test_id("eval-run-rate")).to_contain_text(
        f"{eval_run['passed']}/{total}"
    )
    await expect(row).to_contain_text(eval_run["prompt_hash"])
    await row.get_by_test_id("eval-run-open").click()
    detail = page.get_by_test_id("eval-detail")
    results = detail.get_by_test_id("eval-result-row")
    await expect(results).to_have_count(total)
    failing = detail.locator('[data-testid="eval-result-row"][data-scenario="local-en-aiops-pool"]')
    await expect(failing.get_by_test_id("eval-result")).to_have_text("FAIL")
    await expect(failing.get_by_test_id("eval-failed-checks")).to_contain_text(
        "一个不会出现在任何回答里的词"
    )
    await expect(detail.get_by_test_id("eval-by-language")).to_contain_text("zh")
    await shot(page, "evals.png", top=True, full_page=True)

    await detail.get_by_test_id("eval-failed-only").check()
    await expect(results).to_have_count(total - eval_run["passed"])
    link = failing.get_by_test_id("eval-session-link")
    [item] = [i for i in eval_run["items"] if i["scenario"] == "local-en-aiops-pool"]
    await expect(link).to_have_attribute("href", f"/sessions#{item['sessions'][0]}")
    await link.click()
    await expect(page).to_have_url(f"{server.base_url}/sessions#{item['sessions'][0]}")
    await expect(page.get_by_test_id("session-detail")).to_contain_text(
        "HikariPoolPendingThreadsHigh"
    )


async def test_a_case_is_exported_as_a_scenario_from_the_case_page(
    page: Page, server: Server
) -> None:
    question = "ERR_TIMEOUT 是什么意思？"
    with httpx.Client(base_url=server.base_url, timeout=120) as c:
        sid = c.post("/api/chat", json={"question": question}).json()["sessionId"]
        case_id = c.post("/api/feedback", json={"sessionId": sid, "feedback": "useful"}).json()[
            "caseId"
        ]
    await page.goto(f"/cases#{case_id}")
    await page.get_by_test_id("case-export-scenario").click()
    dialog = page.get_by_test_id("scenario-dialog")
    await expect(dialog.get_by_test_id("sc-id")).to_have_value(f"case-{case_id[:12]}")
    await expect(dialog.get_by_test_id("sc-runbooks")).to_have_value("api/payment-errors.md")
    await expect(dialog.get_by_test_id("scenario-recorded-checks")).to_contain_text("runbook_cited")

    await dialog.get_by_test_id("scenario-save").click()  # no root cause yet: refused
    await expect(dialog.get_by_test_id("scenario-save-error")).to_contain_text("expected.cause")
    await dialog.get_by_test_id("sc-category").select_option("dependency")
    await dialog.get_by_test_id("sc-cause-names").fill("渠道 | channel")
    await dialog.get_by_test_id("scenario-save").click()
    await expect(dialog.get_by_test_id("scenario-saved")).to_contain_text("case-")
    await dialog.get_by_test_id("scenario-saved-checks").scroll_into_view_if_needed()
    await shot(page, "case-export.png")
    saved = load_file(server.work / "evals" / "scenarios" / f"case-{case_id[:12]}.yaml")
    assert saved.question == question and saved.expected.cause is not None
    assert saved.expected.cause.names == [["渠道", "channel"]]
    assert saved.source is not None and saved.source.session_id == sid
