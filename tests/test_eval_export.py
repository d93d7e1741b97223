"""A case from the case library exported as an incident scenario, over the API: the draft takes the
recorded world, runbooks, evidence and cost; the operator's root cause is required; the saved
scenario (under DATA_DIR, never the checkout) passes on the recorded answer and when run again."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from evals.loader import load_file
from evals.suite import Suite, SuiteOptions

pytestmark = pytest.mark.slow  # builds eval knowledge bases and runs the suite (tens of seconds)


QUESTION = "帮我看下服务 order-service 的日志，连接池 Connection is not available 怎么处理"


async def _case(client: httpx.AsyncClient) -> tuple[str, str]:
    chat = await client.post("/api/chat", json={"question": QUESTION})
    assert chat.status_code == 200, chat.text
    sid = chat.json()["sessionId"]
    fb = await client.post("/api/feedback", json={"sessionId": sid, "feedback": "useful"})
    return sid, fb.json()["caseId"]


def _cause(draft: dict, names: list) -> dict:
    scenario = dict(draft["scenario"])
    scenario["expected"] = {
        **scenario["expected"],
        "cause": {"category": "resource_leak", "names": names},
    }
    return scenario


async def test_a_case_becomes_a_scenario_that_passes_on_its_recorded_answer(
    client: httpx.AsyncClient,
    services,
    embeddings,  # noqa: ANN001
) -> None:
    sid, case_id = await _case(client)
    r = await client.get(f"/api/cases/{case_id}/scenario")
    assert r.status_code == 200, r.text
    draft = r.json()
    s = draft["scenario"]
    assert s["flow"] == "chat" and s["question"] == QUESTION and s["knowledge_base"] == "local"
    assert s["language"] == "zh" and s["source"]["session_id"] == sid
    # The world is what the recorded tools returned: order-service's error lines, in full.
    trace = (await client.get(f"/api/sessions/{sid}")).json()
    logs_call = next(i for i in trace["invocations"] if i["toolName"] == "query_logs")
    assert logs_call["inputParams"]["service"] == "order-service"
    messages = [x["message"] for x in s["world"]["logs"]]
    assert messages and all(x["service"] == "order-service" for x in s["world"]["logs"])
    assert any("Apparent connection leak detected" in m for m in messages)
    # The runbooks the answer cited and the evidence it quoted become the expectation.
    answer = trace["session"]["answer"]
    assert s["expected"]["runbooks"] and all(p in answer for p in s["expected"]["runbooks"])
    assert s["expected"]["evidence"]["logs"] and all(
        f in answer for f in s["expected"]["evidence"]["logs"]
    )
    assert s["expected"]["cost"]["model_calls"] > trace["session"]["totalSteps"]
    assert s["expected"]["cause"] is None  # the operator's to write
    assert draft["passesOnRecordedAnswer"] is True, draft["recordedChecks"]
    assert draft["exists"] is False and "resource_leak" in draft["categories"]
    assert Path(draft["path"]).parent == Path(services.settings.data_dir) / "evals" / "scenarios"

    # Saving without a root cause is refused, naming the field; nothing is written.
    no_cause = await client.post(f"/api/cases/{case_id}/scenario", json={"scenario": s})
    assert no_cause.status_code == 422 and "expected.cause" in no_cause.json()["message"]
    assert not Path(draft["path"]).exists()

    # A root cause the recorded answer does not state is saved, and the operator is told.
    odd = await client.post(
        f"/api/cases/{case_id}/scenario", json={"scenario": _cause(draft, ["量子纠缠"])}
    )
    assert odd.status_code == 201, odd.text
    assert odd.json()["passesOnRecordedAnswer"] is False
    assert any("量子纠缠" in c["reason"] for c in odd.json()["recordedChecks"] if not c["passed"])

    again = await client.post(
        f"/api/cases/{case_id}/scenario", json={"scenario": _cause(draft, ["连接池"])}
    )
    assert again.status_code == 409 and again.json()["error"] == "scenario_exists"
    saved = await client.post(
        f"/api/cases/{case_id}/scenario",
        json={"scenario": _cause(draft, [["连接池", "connection pool"]]), "overwrite": True},
    )
    assert saved.status_code == 201, saved.text
    body = saved.json()
    assert body["passesOnRecordedAnswer"] is True, body["recordedChecks"]
    path = Path(body["path"])
    scenario = load_file(path)  # a valid scenario file, as the suite reads it
    assert scenario.expected.cause and scenario.expected.cause.category == "resource_leak"
    assert body["yaml"] == path.read_text(encoding="utf-8")

    # Run again, offline, on the same knowledge base: it passes.
    options = SuiteOptions(suite="local", workdir=Path(services.settings.data_dir) / "evals-ws")
    report = await Suite(services.settings, options, embeddings=embeddings).run([scenario])
    [result] = report.results
    assert result.passed, result.failed


async def test_export_errors_are_json_with_the_right_status(client: httpx.AsyncClient) -> None:
    missing = await client.get("/api/cases/nope/scenario")
    assert missing.status_code == 404 and missing.json()["error"] == "case_not_found"
    _, case_id = await _case(client)
    draft = (await client.get(f"/api/cases/{case_id}/scenario")).json()
    bad_runbook = _cause(draft, ["连接池"])
    bad_runbook["expected"]["runbooks"] = ["kubernetes/no-such-runbook.md"]
    r = await client.post(f"/api/cases/{case_id}/scenario", json={"scenario": bad_runbook})
    assert r.status_code == 422 and "kubernetes/no-such-runbook.md" in r.json()["message"]
    bad_field = {**draft["scenario"], "langauge": "zh"}
    r = await client.post(f"/api/cases/{case_id}/scenario", json={"scenario": bad_field})
    assert r.status_code == 422 and "langauge" in r.json()["message"]
    bad_id = {**_cause(draft, ["连接池"]), "id": "../../etc/passwd"}
    r = await client.post(f"/api/cases/{case_id}/scenario", json={"scenario": bad_id})
    assert r.status_code == 422 and "scenario.id" in r.json()["message"]
    r = await client.post(
        f"/api/cases/{case_id}/scenario", content="{", headers={"content-type": "application/json"}
    )
    assert r.status_code == 422
    r = await client.post("/api/cases/nope/scenario", json={"scenario": _cause(draft, ["连接池"])})
    assert r.status_code == 404
