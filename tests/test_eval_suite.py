"""A suite run, offline, end to end: scenarios run through the real graphs as ordinary recorded
sessions (origin ``eval``) on an eval knowledge base of their own, each judged and stored; the
console's API lists the run; insights do not count eval sessions as traffic."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from evals.loader import load_scenarios
from evals.report import table
from evals.suite import Suite, SuiteOptions
from persistence import eval_runs
from persistence import repository as repo
from persistence.db import Database
from persistence.insights import Window, read_insights
from persistence.models import DiagnosisSession, ToolInvocation
from tests.support.kb import kb_settings
from tests.support.paths import ROOT

pytestmark = pytest.mark.slow  # builds eval knowledge bases and runs the suite (tens of seconds)


FIXTURE_EVALS = ROOT / "tests" / "fixtures" / "evals"


@pytest.fixture(scope="module")
async def suite_run(tmp_path_factory: pytest.TempPathFactory, embeddings) -> AsyncIterator[dict]:  # noqa: ANN001
    """One offline run of the three test scenarios, recorded in a database of its own."""
    base = tmp_path_factory.mktemp("eval-suite")
    settings = kb_settings(base)
    scenarios = load_scenarios([FIXTURE_EVALS])
    lines: list[str] = []
    suite = Suite(
        settings, SuiteOptions(workdir=base / "evals"), embeddings=embeddings, progress=lines.append
    )
    report = await suite.run(scenarios)
    db = Database(settings.database_url)
    try:
        yield {"report": report, "db": db, "settings": settings, "progress": lines, "base": base}
    finally:
        await db.dispose()


async def test_each_scenario_runs_as_recorded_eval_sessions(suite_run: dict) -> None:
    report, db = suite_run["report"], suite_run["db"]
    by_id = {r.scenario.id: r for r in report.results}
    assert set(by_id) == {"local-zh-err-timeout", "local-en-aiops-pool", "local-en-chat-kafka"}
    async with db.session() as s:
        for r in report.results:
            [sid] = r.observation.session_ids
            trace = await repo.get_trace(s, sid)
            assert trace is not None and trace.session.origin == "eval"
            assert (
                trace.session.status == "SUCCESS" and trace.session.answer == r.observation.answer
            )
            # The cost comes from the recorded model steps.
            assert r.observation.model_calls == len(trace.steps) > 0
            assert r.observation.tokens == sum(st.token_count or 0 for st in trace.steps) > 0
    # The AI-Ops run saw its world: the scenario's alert and log line, nothing from the fixtures.
    aiops = by_id["local-en-aiops-pool"]
    tools = {e.tool: e.data for e in aiops.observation.evidence if e.tool != "lookup_knowledge"}
    assert [a["alertname"] for a in tools["query_prometheus_alerts"]["alerts"]] == [
        "HikariPoolPendingThreadsHigh"
    ]
    assert "OrderExportJob.run" in tools["query_logs"]["lines"][0]["message"]
    assert "RedisMemoryUsageHigh" not in aiops.observation.answer  # a bundled fixture alert


async def test_checks_judge_each_run_and_say_why(suite_run: dict) -> None:
    report = suite_run["report"]
    by_id = {r.scenario.id: r for r in report.results}
    assert by_id["local-zh-err-timeout"].passed, by_id["local-zh-err-timeout"].failed
    pool = by_id["local-en-aiops-pool"]
    assert [c.name for c in pool.failed] == ["answer_names"]  # and only that: it cites and quotes
    assert "一个不会出现在任何回答里的词" in pool.failed[0].reason
    assert {c.name for c in pool.checks} >= {"runbook_cited", "evidence_used", "cost"}
    shown = table(report)
    assert "FAIL  local-en-aiops-pool" in shown and "✗ answer_names: does not name" in shown
    assert "pass rate" in shown and "language" in shown and "intent" in shown
    assert any(line.startswith("[3/3]") for line in suite_run["progress"])


async def test_the_run_is_stored_with_its_version_and_results(suite_run: dict) -> None:
    report, db = suite_run["report"], suite_run["db"]
    data = report.as_json()
    async with db.session() as s:
        run = await eval_runs.get_run(s, data["run_id"])
        results = await eval_runs.run_results(s, data["run_id"])
    assert run is not None and run.status == "DONE" and run.model == "offline"
    assert (run.passed, run.result_count, run.pass_rate) == (
        report.passed,
        3,
        report.pass_rate,
    )
    assert run.prompt_hash == data["prompt_hash"] and len(run.prompt_hash) == 12
    assert run.knowledge_hash and run.model_calls == data["cost"]["model_calls"]
    assert run.summary["by_language"] == data["by_language"]
    assert results[0].passed is False  # failures first
    stored = {r.scenario_id: r for r in results}
    pool = next(r for r in report.results if r.scenario.id == "local-en-aiops-pool")
    assert stored["local-en-aiops-pool"].checks == [c.as_dict() for c in pool.checks]
    assert all(r.session_ids for r in results)


async def test_insights_do_not_count_eval_sessions(suite_run: dict) -> None:
    db = suite_run["db"]
    async with db.session() as s:
        before = await read_insights(s, Window())
        evals = (await repo.list_sessions(s, limit=200)).items
    assert evals and all(r.origin == "eval" for r in evals)
    assert before.sessions["total"] == 0 and before.lookups == 0 and before.latency == []
    async with db.session() as s:  # one user session with one lookup
        s.add(DiagnosisSession(session_id="user-1", query="q", status="SUCCESS"))
        s.add(
            ToolInvocation(
                session_id="user-1",
                call_key="k",
                tool_name="lookup_knowledge",
                relevance_level="PRECISE",
            )
        )
        await s.commit()
        after = await read_insights(s, Window())
    assert after.sessions["total"] == 1 and after.lookups == 1
    assert dict(after.relevance)["PRECISE"] == 1


async def test_the_console_api_lists_runs_and_their_checks(suite_run: dict, embeddings) -> None:  # noqa: ANN001
    from server import create_app
    from services import Services

    settings = suite_run["settings"]
    services = await Services.start(settings, embeddings=embeddings)
    try:
        app = create_app(services=services)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
                runs = (await c.get("/api/evals/runs")).json()
                run_id = suite_run["report"].meta["run_id"]
                assert runs["total"] >= 1 and runs["items"][0]["runId"] == run_id
                assert runs["items"][0]["passRate"] == suite_run["report"].pass_rate
                detail = (await c.get(f"/api/evals/runs/{run_id}")).json()
                assert [r["passed"] for r in detail["results"]] == sorted(
                    r["passed"] for r in detail["results"]
                )
                failed = detail["results"][0]
                assert failed["scenarioId"] == "local-en-aiops-pool" and failed["sessionIds"]
                assert any(not ch["passed"] and ch["reason"] for ch in failed["checks"])
                missing = await c.get("/api/evals/runs/nope")
                assert (
                    missing.status_code == 404 and missing.json()["error"] == "eval_run_not_found"
                )
                page = await c.get("/evals")
                assert page.status_code == 200 and "评测 Evals" in page.text
    finally:
        await services.close()


async def test_a_second_run_reuses_the_eval_knowledge_base(suite_run: dict, embeddings) -> None:  # noqa: ANN001
    # The workspace mirrors its source: a removed runbook disappears from the eval base too.
    settings = suite_run["settings"]
    removed = Path(settings.knowledge_base_dir) / "domain"
    shutil.rmtree(removed)
    scenarios = [s for s in load_scenarios([FIXTURE_EVALS]) if s.id == "local-zh-err-timeout"]
    suite = Suite(
        settings, SuiteOptions(workdir=suite_run["base"] / "evals"), embeddings=embeddings
    )
    report = await suite.run(scenarios)
    assert report.passed == 1
    kb = suite_run["base"] / "evals" / "kb-local" / "knowledge_base"
    assert not (kb / "domain").exists() and (kb / "api" / "payment-errors.md").exists()
    assert report.meta["knowledge_hash"] != suite_run["report"].meta["knowledge_hash"]
