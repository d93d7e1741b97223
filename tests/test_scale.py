"""Beyond one machine: two server processes on one MariaDB and one Milvus Lite server.

Worker A talks to a local OpenAI-protocol stub (so model failures can be injected); worker B runs the
offline model. Both share the database, the vector store and the knowledge-base folder.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import subprocess
import threading
import time

import httpx
import pytest

from tests.support.mysql import create_mysql_db, drop_mysql_db, require_mysql
from tests.support.openai_stub import StubLLM
from tests.support.payloads import sse_events
from tests.support.processes import MilvusLiteServer, free_port, start_server

pytestmark = [pytest.mark.slow, pytest.mark.mysql]  # server processes on MariaDB

COMPLEX = "支付网关 ERR_TIMEOUT 突增，同时订单服务 HikariCP 连接池超时，分别怎么排查？"
RUNBOOK = """---
title: Kafka consumer lag runbook
keywords: [KAFKA_LAG_ZZ9]
summary: What to do when Kafka consumer lag keeps growing on the order pipeline.
category: ops
---
# Kafka consumer lag runbook

## Diagnose consumer lag
When Kafka consumer lag keeps growing, run kafka-consumer-groups --describe and compare the lag per
partition; a single hot partition points at key skew, uniform lag at slow consumers.
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    server_url = require_mysql()
    base = tmp_path_factory.mktemp("cluster")
    db_url = asyncio.run(create_mysql_db(server_url))
    milvus = MilvusLiteServer(base / "milvus-data", free_port()).start()
    stub = StubLLM().start()
    shared = {"DATABASE_URL": db_url, "MILVUS_URI": milvus.uri, "LOG_LEVEL": "WARNING"}
    a = b = None
    try:
        a = start_server(
            base,
            name="worker-a",
            LLM_BASE_URL=stub.base_url,
            LLM_MODEL="stub",
            LLM_API_KEY="k",
            LLM_MAX_RETRIES="2",
            LLM_TIMEOUT_S="3",
            **shared,
        )
        b = start_server(
            base, name="worker-b", **shared
        )  # finds the documents A imported: no second import
        yield {"a": a.base_url, "b": b.base_url, "stub": stub, "servers": (a, b)}
    finally:
        for srv in (a, b):
            if srv is not None:
                srv.stop()
        stub.stop()
        milvus.stop()
        asyncio.run(drop_mysql_db(server_url, db_url))


def test_document_uploaded_on_one_worker_is_found_on_the_other(cluster) -> None:  # noqa: ANN001
    up = httpx.post(
        f"{cluster['a']}/api/documents/upload",
        files={"file": ("kafka-lag.md", RUNBOOK.encode(), "text/markdown")},
        data={"category": "ops"},
        timeout=60,
    )
    assert up.status_code == 201, up.text
    l0 = httpx.post(
        f"{cluster['b']}/api/knowledge/lookup", json={"query": "KAFKA_LAG_ZZ9"}, timeout=60
    ).json()
    assert (
        l0["result"]["relevanceLevel"] == "PRECISE"
        and l0["result"]["primary"]["source"] == "ops/kafka-lag.md"
    )
    l1 = httpx.post(
        f"{cluster['b']}/api/knowledge/lookup",
        json={"query": "kafka consumer lag keeps growing per partition"},
        timeout=60,
    ).json()
    assert any(s["source"] == "ops/kafka-lag.md" for s in l1["scores"]["l1Scores"])
    assert (
        httpx.get(f"{cluster['b']}/healthz").json()["knowledgeVersion"]
        == httpx.get(f"{cluster['a']}/healthz").json()["knowledgeVersion"]
    )


def test_session_started_on_one_worker_resumes_on_the_other_with_its_memory(cluster) -> None:  # noqa: ANN001
    stub: StubLLM = cluster["stub"]
    # The planner and the first step's executor (its lookup settles the step) succeed; the second
    # step's executor call fails (3 tries). The rules supervisor makes no model call.
    stub.fail(3, after=2)
    r = httpx.post(f"{cluster['a']}/api/chat", json={"question": COMPLEX}, timeout=120)
    assert r.status_code == 502 and "model endpoint" in r.json()["message"]
    sid = _session_of(r)
    before = httpx.get(f"{cluster['b']}/api/sessions/{sid}").json()
    assert before["session"]["status"] == "FAILED" and len(before["invocations"]) == 1
    first_domain_source = before["invocations"][0]["retrievalDetails"]["retrieved_domains"]
    resumed = httpx.post(f"{cluster['b']}/api/sessions/{sid}/resume", timeout=120).json()
    assert resumed["status"] == "SUCCESS" and resumed["sessionId"] == sid
    after = httpx.get(f"{cluster['b']}/api/sessions/{sid}").json()
    invocations = after["invocations"]
    assert len(invocations) == 2  # the domain looked up on A is not looked up again on B
    assert invocations[1]["retrievalDetails"]["retrieved_domains"][0] == first_domain_source[0]
    assert set(invocations[1]["retrievalDetails"]["retrieved_domains"]) == {"api", "infrastructure"}
    keys = [s["stepIndex"] for s in after["steps"]]
    assert len(keys) == len(set(keys))
    assert (
        "api/payment-errors.md" in resumed["answer"]
        and "infrastructure/mysql-connection-pool.md" in resumed["answer"]
    )


def test_model_endpoint_errors_are_retried_then_the_session_fails_clearly(cluster) -> None:  # noqa: ANN001
    stub: StubLLM = cluster["stub"]
    n = len(stub.requests)
    stub.fail(3, mode="500")  # the first call and its two retries
    r = httpx.post(f"{cluster['a']}/api/chat", json={"question": "ERR_TIMEOUT 是什么"}, timeout=120)
    assert r.status_code == 502 and "LLM_MAX_RETRIES" in r.json()["message"]
    assert len(stub.requests) - n == 3
    sid = _session_of(r)
    s = httpx.get(f"{cluster['a']}/api/sessions/{sid}").json()["session"]
    assert s["status"] == "FAILED" and "model endpoint" in s["answer"]
    stub.fail(3, mode="hang")  # time-outs (LLM_TIMEOUT_S=3) are retried the same way
    t0 = time.monotonic()
    r = httpx.post(f"{cluster['a']}/api/chat", json={"question": "ERR_TIMEOUT 是什么"}, timeout=120)
    assert (
        r.status_code == 502 and "timed out" in r.json()["message"] and time.monotonic() - t0 >= 9
    )
    ok = httpx.post(f"{cluster['a']}/api/chat", json={"question": "ERR_TIMEOUT 是什么"}, timeout=60)
    assert ok.status_code == 200  # and it works again once the endpoint does


def test_fifty_concurrent_sessions(cluster, record_property) -> None:  # noqa: ANN001
    topics = [
        ("ERR_TIMEOUT 是什么意思", "api/payment-errors.md"),
        ("HikariCP 连接池超时怎么办", "infrastructure/mysql-connection-pool.md"),
        ("Flyway checksum mismatch 怎么修", "infrastructure/flyway-best-practices.md"),
        ("maxmemory-policy 怎么选", "infrastructure/redis-config.md"),
        ("Spring AI @Tool 怎么写", "domain/spring-ai-tool-best-practices.md"),
        ("故障定级 P0 标准", "troubleshooting/fault-diagnosis-process.md"),
    ]
    jobs = [topics[i % len(topics)] for i in range(50)]

    async def one(client: httpx.AsyncClient, q: str) -> tuple[int, float, dict]:
        t0 = time.perf_counter()
        r = await client.post("/api/chat", json={"question": q})
        return r.status_code, time.perf_counter() - t0, r.json()

    async def run() -> tuple[list, float]:
        async with httpx.AsyncClient(
            base_url=cluster["b"], timeout=300, limits=httpx.Limits(max_connections=50)
        ) as c:
            t0 = time.perf_counter()
            out = await asyncio.gather(*(one(c, q) for q, _ in jobs))
            return out, time.perf_counter() - t0

    results, wall = asyncio.run(run())
    statuses = [s for s, _, _ in results]
    assert all(s == 200 for s in statuses), statuses
    latencies = sorted(t for _, t, _ in results)
    p99 = latencies[int(0.99 * (len(latencies) - 1))]
    sessions = [body["sessionId"] for _, _, body in results]
    assert len(set(sessions)) == 50
    for (_, expected), (_, _, body) in zip(jobs, results, strict=True):
        trace = httpx.get(f"{cluster['b']}/api/sessions/{body['sessionId']}").json()
        assert trace["session"]["status"] == "SUCCESS" and expected in body["answer"]
        # Never another session's document: what the answer cites (its document headings and its
        # sources line) is this question's runbook. The quoted runbook text may mention other
        # runbooks' paths (payment-errors.md points to the connection-pool runbook), so the
        # answer's text as a whole is no test of that.
        cited = set(re.findall(r"\*\*([\w./-]+\.md)\*\*", body["answer"]))
        for line in re.findall(r"^来源：(.+)$", body["answer"], flags=re.M):
            cited |= set(line.split("、"))
        assert cited == {expected}, (cited, body["answer"][:500])
        for inv in trace["invocations"]:
            assert inv["retrievalDetails"]["retrieved_domains"] == [expected.split("/")[0]]
    listing = httpx.get(f"{cluster['b']}/api/sessions", params={"pageSize": 200}).json()
    assert (
        sum(1 for s in listing["items"] if s["sessionId"] in set(sessions)) == 50
    )  # recorded exactly once
    numbers = {
        "sessions": 50,
        "wall_s": round(wall, 2),
        "sessions_per_s": round(50 / wall, 2),
        "p50_s": round(statistics.median(latencies), 3),
        "p99_s": round(p99, 3),
    }
    record_property("load", numbers)
    print(f"\nLOAD (MariaDB + Milvus Lite server, offline model): {numbers}")


def _mariadb_alive() -> bool:
    ping = ["mysqladmin", "--host=127.0.0.1", "--user=root", "ping"]
    return subprocess.run(ping, capture_output=True).returncode == 0


def _mariadb(action: str) -> None:
    """Stop or start the machine's MariaDB (the way this machine kind starts it)."""
    if action == "stop":
        subprocess.run(
            ["mysqladmin", "--host=127.0.0.1", "--user=root", "shutdown"], check=True, timeout=60
        )
        for _ in range(120):  # shutdown returns before the process has exited
            if subprocess.run(["pgrep", "-x", "mariadbd"], capture_output=True).returncode != 0:
                return
            time.sleep(0.25)
        raise RuntimeError("MariaDB did not stop")
    start = [
        "start-stop-daemon",
        "--start",
        "--oknodo",
        "--background",
        "--exec",
        "/usr/sbin/mariadbd",
    ]
    subprocess.run(start, check=True, timeout=30)
    for _ in range(120):
        if _mariadb_alive():
            return
        time.sleep(0.5)
    raise RuntimeError("MariaDB did not come back")


def test_database_outage_mid_run(cluster) -> None:  # noqa: ANN001
    stub: StubLLM = cluster["stub"]
    stub.delay_s = 0.7  # keep a run in flight while the database goes away
    box: dict = {}

    def stream() -> None:
        with httpx.Client(timeout=300) as c:
            box["events"] = sse_events(
                c.post(f"{cluster['a']}/api/chat_stream", json={"question": COMPLEX}).text
            )

    seen = len(stub.requests)
    t = threading.Thread(target=stream)
    t.start()
    try:
        for _ in range(200):  # wait until the run has made two model calls: it is in flight
            if len(stub.requests) >= seen + 2:
                break
            time.sleep(0.1)
        _mariadb("stop")
        health = httpx.get(f"{cluster['a']}/healthz", timeout=10)
        assert health.status_code == 503 and health.json()["database"]["ok"] is False
        r = httpx.get(f"{cluster['b']}/api/sessions", timeout=30)
        assert r.status_code == 503 and r.json()["error"] == "database_unavailable"
    finally:
        _mariadb("start")
        stub.delay_s = 0.0
    t.join(timeout=300)
    for _ in range(120):  # both workers recover by themselves
        if all(
            httpx.get(f"{u}/healthz", timeout=5).status_code == 200
            for u in (cluster["a"], cluster["b"])
        ):
            break
        time.sleep(0.5)
    assert (
        httpx.post(
            f"{cluster['b']}/api/chat", json={"question": "ERR_TIMEOUT 是什么"}, timeout=60
        ).status_code
        == 200
    )
    sid = box["events"][0][1]["sessionId"]
    for _ in range(120):  # the interrupted run's record is closed once the database is back
        s = httpx.get(f"{cluster['a']}/api/sessions/{sid}", timeout=10).json()
        if s["session"]["status"] != "RUNNING":
            break
        time.sleep(1)
    assert s["session"]["status"] in {"SUCCESS", "FAILED"}
    steps = [st["stepIndex"] for st in s["steps"]]
    assert len(steps) == len(set(steps))  # nothing half-written twice


def _session_of(r: httpx.Response) -> str:
    m = re.search(r"session ([0-9a-f]{32})", r.json()["message"])
    assert m, r.text
    return m.group(1)
