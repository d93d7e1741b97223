"""``/metrics``: Prometheus text format; counters that move with what users do; the token choice;
several worker processes summed; and a Grafana dashboard that only asks for metrics we export."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.paths import ROOT

DASHBOARD = ROOT / "grafana/dashboards/superbiz.json"
Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Series:
    """Every sample of a scrape, keyed by (sample name, labels)."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(series: Series, name: str, **labels: str) -> float:
    """Sum of the samples named ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in series.items() if n == name and want <= ls)


async def scrape(client: httpx.AsyncClient, **headers: str) -> Series:
    r = await client.get("/metrics", headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return parse(r.text)


def runbook(marker: str) -> bytes:
    return f"""---
title: Metrics probe runbook {marker}
keywords: [{marker}]
summary: A runbook uploaded to watch the import counters move.
category: ops
---
# Metrics probe runbook {marker}

## Check
Look at the consumer lag of {marker} per partition.
""".encode()


async def wait_for_job(client: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    for _ in range(600):
        job = (await client.get(f"/api/knowledge/jobs/{job_id}")).json()
        if job["status"] != "running":
            return job
        await asyncio.sleep(0.2)
    raise AssertionError(f"import job {job_id} did not finish")


async def use_everything(client: httpx.AsyncClient) -> dict[str, Any]:
    """A chat, a retrieval-test lookup, an upload and a folder import, as a user would."""
    chat = await client.post("/api/chat", json={"question": "ERR_TIMEOUT 是什么意思？"})
    assert chat.status_code == 200, chat.text
    hit = await client.post("/api/knowledge/lookup", json={"query": "ERR_TIMEOUT"})
    assert hit.status_code == 200, hit.text
    marker = f"METRICS_PROBE_{uuid.uuid4().hex[:8].upper()}"
    files = {"file": (f"{marker.lower()}.md", runbook(marker), "text/markdown")}
    up = await client.post("/api/documents/upload", files=files, data={"category": "ops"})
    assert up.status_code == 201, up.text
    doc_id = up.json()["document"]["docId"]
    started = await client.post("/api/knowledge/init")
    assert started.status_code == 202, started.text
    job = await wait_for_job(client, started.json()["jobId"])
    assert job["status"] == "done", job
    # The shared stack serves other tests: leave its knowledge base as it was.
    assert (await client.delete(f"/api/documents/{doc_id}")).status_code == 200
    return {"session": chat.json()["sessionId"], "lookup": hit.json()}


async def test_counters_move_after_a_chat_a_lookup_and_an_import(client) -> None:  # noqa: ANN001
    before = await scrape(client)
    used = await use_everything(client)
    await client.get(f"/api/sessions/{used['session']}")
    await client.get("/no/such/page")
    await client.request("BREW", "/api/sessions")  # any method name a client makes up
    after = await scrape(client)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    # The chat: one successful CHAT session, model calls by node, at least its own lookup.
    assert moved("superbiz_sessions_total", flow="CHAT", status="SUCCESS") == 1
    assert moved("superbiz_sessions_total", status="FAILED") == 0
    calls = {
        dict(ls)["node"]: v - before.get((n, ls), 0.0)
        for (n, ls), v in after.items()
        if n == "superbiz_model_calls_total" and ("outcome", "ok") in ls
    }
    assert sum(calls.values()) >= 1 and all(node and node != "none" for node in calls)
    assert moved("superbiz_model_call_duration_seconds_count") == sum(calls.values())
    assert moved("superbiz_model_tokens_total", kind="input") > 0  # the offline model estimates
    # The retrieval test: ERR_TIMEOUT names exactly one runbook, so L0 answers PRECISE alone.
    assert used["lookup"]["scores"]["layer"] == "L0"
    assert moved("superbiz_lookups_total", layer="L0", level="PRECISE", dedup_reason="none") >= 2
    assert moved("superbiz_lookups_total") >= 2  # the chat's lookup and the retrieval test
    assert moved("superbiz_lookup_duration_seconds_count", layer="L0") >= 2
    # The upload (one document indexed) and the folder import (a run; unchanged files skipped).
    assert moved("superbiz_documents_imported_total", outcome="indexed") == 1
    assert moved("superbiz_document_import_duration_seconds_count", outcome="indexed") == 1
    assert moved("superbiz_document_import_duration_seconds_sum", outcome="indexed") > 0
    assert moved("superbiz_import_run_duration_seconds_count", force="false") == 1
    assert moved("superbiz_documents_imported_total", outcome="skipped") >= 6
    # HTTP by route template: the template, never the session id; unknown paths are one series.
    http = "superbiz_http_requests_total"
    assert moved(http, method="POST", route="/api/chat", status="200") == 1
    assert moved(http, method="POST", route="/api/documents/upload", status="201") == 1
    assert moved(http, method="GET", route="/api/sessions/{session_id}", status="200") == 1
    assert moved(http, method="GET", route="unmatched", status="404") == 1
    assert moved(http, method="other", route="/api/sessions", status="405") == 1
    assert not [ls for n, ls in after if ("method", "BREW") in ls]
    timed = "superbiz_http_request_duration_seconds_count"
    assert moved(timed, method="POST", route="/api/chat") == 1
    assert not [n for n, _ in after if n.endswith("_created")], "no _created series"
    routes = {dict(ls).get("route") for (n, ls) in after if n == http}
    assert not any(used["session"] in r for r in routes if r)
    assert not any("/no/such" in r for r in routes if r)


async def test_requests_refused_before_routing_keep_their_route(client) -> None:  # noqa: ANN001
    # The upload limit answers 413 before the router runs; the series still names the route.
    before = await scrape(client)
    limit = client.app.state.settings.max_upload_mb * 1024 * 1024
    big = {"file": ("big.md", b"x" * (limit + 200_000), "text/markdown")}
    r = await client.post("/api/documents/upload", files=big, data={"category": "ops"})
    assert r.status_code == 413
    after = await scrape(client)
    labels = {"method": "POST", "route": "/api/documents/upload", "status": "413"}
    name = "superbiz_http_requests_total"
    assert value(after, name, **labels) - value(before, name, **labels) == 1


# --- who may read /metrics ----------------------------------------------------------------------


@pytest.fixture
async def app_with(services) -> AsyncIterator[Any]:  # noqa: ANN001
    from server import create_app

    clients: list[httpx.AsyncClient] = []

    async def make(**settings: Any) -> httpx.AsyncClient:
        app = create_app(settings=services.settings.model_copy(update=settings), services=services)
        transport = httpx.ASGITransport(app=app)
        c = httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60)
        clients.append(c)
        return c

    yield make
    for c in clients:
        await c.aclose()


async def test_metrics_stay_open_with_an_api_key(app_with) -> None:  # noqa: ANN001
    c = await app_with(api_key="s3cret")
    assert (await c.get("/api/sessions")).status_code == 401  # reads are guarded …
    await scrape(c)  # … Prometheus scrapes without the key, which would also allow changes


async def test_a_metrics_token_guards_metrics(app_with) -> None:  # noqa: ANN001
    c = await app_with(api_key="s3cret", metrics_token="m-token")
    for headers, code in (
        ({}, "metrics_token_required"),
        ({"authorization": "Basic bS10b2tlbg=="}, "metrics_token_required"),
        ({"authorization": "Bearer wrong"}, "invalid_metrics_token"),
        ({"x-api-key": "s3cret"}, "metrics_token_required"),  # the API key is not the token
    ):
        r = await c.get("/metrics", headers=headers)
        assert r.status_code == 401 and r.json()["error"] == code, (headers, r.text)
        assert "METRICS_TOKEN" in r.json()["message"]
        assert r.headers["www-authenticate"] == "Bearer"
    series = await scrape(c, authorization="Bearer m-token")
    assert any(n.startswith("superbiz_http_request_duration_seconds") for n, _ in series)


# --- several workers ----------------------------------------------------------------------------

RECORD = "from telemetry import metrics; metrics.record_session('CHAT', 'SUCCESS')"
EXPOSE = (
    "import sys; from telemetry import metrics; sys.stdout.write(metrics.exposition()[0].decode())"
)


def _python(code: str, folder: Path) -> str:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_workers_sharing_a_multiprocess_folder_are_summed(tmp_path: Path) -> None:
    # Two "workers" count a session each; a third process answering /metrics reports both.
    for _ in range(2):
        _python(RECORD, tmp_path)
    series = parse(_python(EXPOSE, tmp_path))
    assert value(series, "superbiz_sessions_total", flow="CHAT", status="SUCCESS") == 2


# --- the Grafana dashboard ----------------------------------------------------------------------

FUNCTIONS_AND_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "offset",
    "bool",
    "inf",
    "nan",
}


def promql_metrics(expr: str) -> tuple[set[str], set[str]]:
    """(metric names, grouping labels) an expression uses; functions and keywords left out."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)  # strings (label values)
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # range selectors
    grouping: set[str] = set()
    for names in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", text):
        grouping |= {n.strip() for n in names.split(",") if n.strip()}
    text = re.sub(r"\b(?:by|without)\s*\([^)]*\)", "", text)
    text = re.sub(r"\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b", "", text)  # numbers (1e-9)
    names = {
        m.group(1)
        for m in re.finditer(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*(\()?", text)
        if not m.group(2) and m.group(1).lower() not in FUNCTIONS_AND_KEYWORDS
    }
    return names, grouping - {"le"}


def dashboard_queries() -> list[tuple[str, str]]:
    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [
        (panel["title"], target["expr"])
        for panel in dash["panels"]
        for target in panel.get("targets", [])
    ]


def test_the_promql_reader_finds_metrics_and_labels() -> None:
    names, labels = promql_metrics(
        'histogram_quantile(0.95, sum by (le, route) (rate(x_bucket{status=~"5.."}[5m]))) '
        "/ clamp_min(sum(increase(y_total[$__range])), 1e-9)"
    )
    assert names == {"x_bucket", "y_total"} and labels == {"route"}


async def test_every_dashboard_query_names_a_metric_the_app_exports(client) -> None:  # noqa: ANN001
    await use_everything(client)
    series = await scrape(client)
    labels_of: dict[str, set[str]] = {}
    for name, ls in series:
        labels_of.setdefault(name, set()).update(k for k, _ in ls)
    queries = dashboard_queries()
    assert len(queries) >= 15
    problems = []
    for title, expr in queries:
        names, grouping = promql_metrics(expr)
        assert names, f"{title}: no metric in {expr}"
        for name in names:
            if name not in labels_of:
                problems.append(f"{title}: {name} is not exported")
            elif not grouping <= labels_of[name]:
                problems.append(
                    f"{title}: {name} has no label {sorted(grouping - labels_of[name])}"
                )
    assert not problems, "\n".join(problems)
