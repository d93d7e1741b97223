"""A run's world reaches the real tools through its context: the alert, log and clock tools return
the incident's world instead of the fixtures (or Prometheus/Loki), through the real graphs."""

from __future__ import annotations

import uuid

import pytest

from graph.context import Context
from runs.run_evidence import run_evidence
from tools.world import World

WORLD = {
    "now": "2026-12-01T09:30:00Z",
    "alerts": [
        {
            "labels": {"alertname": "DiskFillingUp", "severity": "critical", "service": "billing"},
            "annotations": {"summary": "billing disk 97%", "description": "predict_linear < 0"},
            "state": "firing",
            "activeAt": "2026-12-01T09:10:00Z",
            "value": 0.97,  # a number in YAML: Prometheus sends text
        },
        {"labels": {"alertname": "Quiet", "severity": "info"}, "state": "pending"},
    ],
    "logs": [
        {
            "ts": "2026-12-01T07:00:00Z",
            "service": "billing",
            "level": "ERROR",
            "message": "too old",
        },
        {
            "ts": "2026-12-01T09:20:00Z",
            "service": "billing",
            "level": "ERROR",
            "message": "disk full on /data",
        },
        {
            "ts": "2026-12-01T09:21:00Z",
            "service": "billing",
            "level": "INFO",
            "message": "heartbeat",
        },
        {
            "ts": "2026-12-01T09:22:00Z",
            "service": "other",
            "level": "ERROR",
            "message": "not billing",
        },
    ],
}
QUESTION = "现在几点？看下当前告警，以及服务 billing 的日志"


def test_the_world_answers_like_prometheus_and_loki() -> None:
    w = World.model_validate(WORLD)
    body = w.alerts_body()
    assert [a["labels"]["alertname"] for a in body["data"]["alerts"]] == ["DiskFillingUp", "Quiet"]
    assert body["data"]["alerts"][0]["value"] == "0.97"
    # The last 60 minutes before `now`, as Loki would return them; without `now`, every line.
    assert [x["message"] for x in w.log_lines(60)][:2] == ["disk full on /data", "heartbeat"]
    assert len(World.model_validate({**WORLD, "now": None}).log_lines(60)) == 4


def test_a_malformed_world_is_refused_before_the_run() -> None:
    with pytest.raises(ValueError, match=r"world\.alerts\.0\.labels.*alertname"):
        Context(world={"alerts": [{"labels": {"severity": "warning"}}]})
    with pytest.raises(ValueError, match=r"world\.logs"):
        Context(world={"logs": "not a list"})


async def _tool_results(services, context: Context) -> dict[str, dict]:  # noqa: ANN001
    runner = services.runner()
    thread = uuid.uuid4().hex
    result = await runner.run(QUESTION, thread_id=thread, context=context)
    assert result.status == "SUCCESS", result.error
    evidence = await run_evidence(services.graphs.chat, thread, result.session_id)
    assert evidence is not None
    return {e.tool: e.data for e in evidence if e.tool != "lookup_knowledge"}


async def test_the_tools_return_the_world_of_the_run(services) -> None:  # noqa: ANN001
    got = await _tool_results(services, Context(world=WORLD))
    assert set(got) == {"query_prometheus_alerts", "query_logs", "get_current_time"}
    alerts = got["query_prometheus_alerts"]
    assert alerts["source"] == "world" and [a["alertname"] for a in alerts["alerts"]] == [
        "DiskFillingUp"  # firing only, as the tool filters Prometheus' answer
    ]
    logs = got["query_logs"]
    assert logs["source"] == "world" and [x["message"] for x in logs["lines"]] == [
        "disk full on /data"  # billing's error lines of the last hour
    ]
    assert got["get_current_time"]["utc"] == "2026-12-01T09:30:00+00:00"


async def test_without_a_world_the_configured_sources_answer(services) -> None:  # noqa: ANN001
    got = await _tool_results(services, Context())
    assert got["query_prometheus_alerts"]["source"] == "fixture"
    assert "DiskFillingUp" not in str(got["query_prometheus_alerts"])
    assert got["get_current_time"]["utc"] != "2026-12-01T09:30:00+00:00"  # the real clock
