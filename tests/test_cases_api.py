"""The case library and the insights over real recorded sessions (offline model), on SQLite and
MariaDB: feedback files and retracts cases, concurrent feedback leaves one case or none, and the
insights add up to what the runs recorded."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.support.kb import started_services

QUESTIONS = [
    "Redis OOM command not allowed 怎么处理？",
    "ERR_TIMEOUT 是什么意思？",
    "支付网关 ERR_TIMEOUT 突增，同时订单服务 HikariCP 连接池超时，分别怎么排查？",
    "How do I fix a database connection pool timeout?",  # no exact keyword: answered from L1
]


@pytest.fixture(scope="module", params=["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
async def api(request, tmp_path_factory, embeddings) -> AsyncIterator[httpx.AsyncClient]:  # noqa: ANN001
    """An HTTP client on the app over a fresh stack of its own (so the counts are this module's)."""
    from server import create_app

    base = tmp_path_factory.mktemp(f"cases-{request.param}")
    async with started_services(base, embeddings, mysql=request.param == "mysql") as svc:
        app = create_app(services=svc)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://test", timeout=120
            ) as c:
                yield c


async def _chat(api: httpx.AsyncClient, question: str) -> str:
    r = await api.post("/api/chat", json={"question": question})
    assert r.status_code == 200, r.text
    return r.json()["sessionId"]


async def _feedback(api: httpx.AsyncClient, sid: str, value: str) -> dict[str, Any]:
    r = await api.post("/api/feedback", json={"sessionId": sid, "feedback": value})
    assert r.status_code == 200, r.text
    return r.json()


async def _cases_of(api: httpx.AsyncClient, sid: str) -> list[dict[str, Any]]:
    items = (await api.get("/api/cases", params={"pageSize": 200})).json()["items"]
    return [c for c in items if c["sessionId"] == sid]


async def test_useful_files_a_case_and_retracting_removes_it(api: httpx.AsyncClient) -> None:
    sid = await _chat(api, QUESTIONS[0])
    filed = await _feedback(api, sid, "useful")
    assert filed["message"] == "case created" and filed["caseId"]
    [case] = await _cases_of(api, sid)
    assert case["caseId"] == filed["caseId"] and case["title"].startswith("Redis OOM")
    assert case["excerpt"]  # the answer's opening, for the list

    detail = (await api.get(f"/api/cases/{filed['caseId']}")).json()
    answer = (await api.get(f"/api/sessions/{sid}")).json()["session"]["answer"]
    assert detail["problem"] == QUESTIONS[0] and detail["solution"] == answer
    assert detail["session"]["sessionId"] == sid and detail["session"]["feedback"] == "useful"
    assert detail["session"]["evidenceScore"] is not None

    retracted = await _feedback(api, sid, "not_useful")
    assert retracted["caseId"] is None and retracted["message"] == "feedback recorded; case removed"
    assert await _cases_of(api, sid) == []
    gone = await api.get(f"/api/cases/{filed['caseId']}")
    assert gone.status_code == 404 and gone.json()["error"] == "case_not_found"
    assert "GET /api/cases" in gone.json()["message"]

    again = await _feedback(api, sid, "useful")  # useful once more: a new case
    assert again["message"] == "case created" and again["caseId"] != filed["caseId"]


async def test_cases_search_and_paging(api: httpx.AsyncClient) -> None:
    sids = [await _chat(api, q) for q in QUESTIONS[:3]]
    for sid in sids:
        await _feedback(api, sid, "useful")
    hit = (await api.get("/api/cases", params={"q": "hikaricp"})).json()  # any letter case
    assert hit["q"] == "hikaricp" and [c["sessionId"] for c in hit["items"]] == [sids[2]]
    zh = (await api.get("/api/cases", params={"q": "是什么意思"})).json()
    assert [c["sessionId"] for c in zh["items"]] == [sids[1]]
    # LIKE wildcards are text: "%_%" matches only those three characters (as a pattern it would
    # match every case; the answers themselves quote percentages like "20%–30%").
    assert (await api.get("/api/cases", params={"q": "%_%"})).json()["total"] == 0

    everything = (await api.get("/api/cases", params={"pageSize": 200})).json()
    first = (await api.get("/api/cases", params={"pageSize": 2, "page": 1})).json()
    second = (await api.get("/api/cases", params={"pageSize": 2, "page": 2})).json()
    assert first["total"] == second["total"] == everything["total"] >= 3
    assert [c["caseId"] for c in first["items"] + second["items"]] == [
        c["caseId"] for c in everything["items"][:4]
    ]
    assert everything["items"][0]["sessionId"] == sids[-1]  # newest first

    bad = await api.get("/api/cases", params={"pageSize": 0})
    assert bad.status_code == 422 and "pageSize" in bad.json()["message"]
    long = await api.get("/api/cases", params={"q": "x" * 201})
    assert long.status_code == 422


async def test_concurrent_feedback_leaves_one_case_or_none(api: httpx.AsyncClient) -> None:
    sid = await _chat(api, QUESTIONS[1])
    # All "useful" at once: exactly one case, and every caller is told its id.
    answers = await asyncio.gather(*(_feedback(api, sid, "useful") for _ in range(8)))
    assert len({a["caseId"] for a in answers}) == 1
    assert sorted(a["message"] for a in answers).count("case created") == 1
    assert len(await _cases_of(api, sid)) == 1

    # Mixed at once, several rounds: the case exists exactly when the last feedback is useful.
    for round_ in range(3):
        values = ["useful", "not_useful"] * 4
        await asyncio.gather(*(_feedback(api, sid, v) for v in values[round_:] + values[:round_]))
        last = (await api.get(f"/api/sessions/{sid}")).json()["session"]["feedback"]
        cases = await _cases_of(api, sid)
        assert len(cases) == (1 if last == "useful" else 0), (round_, last, cases)


async def test_insights_add_up_to_the_recorded_runs(api: httpx.AsyncClient) -> None:
    await asyncio.sleep(1.1)  # MariaDB keeps whole seconds: earlier tests' rows fall before `since`
    since = datetime.now(UTC).replace(microsecond=0)
    sids = [await _chat(api, q) for q in QUESTIONS]
    await _feedback(api, sids[0], "useful")
    await _feedback(api, sids[1], "not_useful")
    await _feedback(api, sids[2], "useful")
    await _feedback(api, sids[2], "not_useful")  # retracted: no case; sids[3] gets none
    traces = [(await api.get(f"/api/sessions/{s}")).json() for s in sids]
    calls = [inv for t in traces for inv in t["invocations"]]
    lookups = [c for c in calls if c["toolName"] == "lookup_knowledge"]
    assert lookups, "the offline model looks things up for these questions"

    r = await api.get("/api/insights", params={"since": since.isoformat()})
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["empty"] is False and d["bucket"] == "hour" and d["lookups"] == len(lookups)
    levels = Counter(c["relevanceLevel"] for c in lookups)
    assert {x["key"]: x["count"] for x in d["relevanceLevels"]} == dict(levels)
    dedup = Counter(c["dedupReason"] for c in lookups)
    assert {x["key"]: x["count"] for x in d["dedupReasons"]} == dict(dedup)
    with_similarity = [
        c for c in lookups if c["retrievalDetails"].get("l1_top_similarity") is not None
    ]
    assert with_similarity and sum(b["count"] for b in d["similarity"]) == len(with_similarity)
    for c in with_similarity:  # each similarity landed in its bin
        v = c["retrievalDetails"]["l1_top_similarity"]
        assert any(b["lo"] <= v <= b["hi"] and b["count"] for b in d["similarity"])
    assert sum(b["count"] for b in d["evidenceScores"]) == len(sids)
    scores = [t["session"]["evidenceScore"] for t in traces]
    assert d["evidenceMean"] == round(sum(scores) / len(scores), 1)

    fb = d["feedback"]
    assert (fb["sessions"], fb["useful"], fb["notUseful"], fb["noFeedback"]) == (4, 1, 2, 1)
    assert fb["cases"] == 1 and fb["feedbackRate"] == 0.75 and fb["usefulRate"] == 0.3333
    assert d["sessionsByStatus"] == {"RUNNING": 0, "SUCCESS": 4, "FAILED": 0}
    assert sum(t["sessions"] for t in d["timeline"]) == 4
    assert sum(t["lookups"] for t in d["timeline"]) == len(lookups)
    latency = {x["tool"]: x for x in d["toolLatency"]}
    assert {t: x["calls"] for t, x in latency.items()} == dict(
        Counter(c["toolName"] for c in calls)
    )
    durations = sorted(c["durationMs"] for c in lookups)
    assert latency["lookup_knowledge"]["maxMs"] == durations[-1]
    assert (
        durations[0] <= latency["lookup_knowledge"]["p50Ms"] <= latency["lookup_knowledge"]["p95Ms"]
    )

    everything = (await api.get("/api/insights")).json()  # no window: at least as much
    assert everything["since"] is None and everything["lookups"] >= d["lookups"]


async def test_insights_window_errors_and_empty_window(api: httpx.AsyncClient) -> None:
    swapped = await api.get(
        "/api/insights", params={"since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00"}
    )
    assert swapped.status_code == 400 and swapped.json()["error"] == "invalid_window"
    assert "swap them" in swapped.json()["message"]
    bad = await api.get("/api/insights", params={"since": "yesterday"})
    assert bad.status_code == 422 and "since" in bad.json()["message"]
    assert (await api.get("/api/insights", params={"bucket": "minute"})).status_code == 422

    old = await api.get(
        "/api/insights", params={"since": "2001-01-01T00:00:00Z", "until": "2001-01-04T00:00:00Z"}
    )
    d = old.json()
    assert old.status_code == 200 and d["empty"] is True and d["lookups"] == 0
    assert d["bucket"] == "day" and len(d["timeline"]) == 4  # every day present, at zero
    assert all(t["sessions"] == t["lookups"] == 0 for t in d["timeline"])
    assert d["feedback"]["feedbackRate"] is None and d["toolLatency"] == []
