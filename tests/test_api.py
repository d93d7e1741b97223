"""The HTTP API over httpx against the app (SQLite stack), with the error contract on every path."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.support.kb import started_services
from tests.support.payloads import sse_events

RUNBOOK = b"""---
title: Kafka consumer lag runbook
keywords: [KAFKA_LAG_QX7, consumer lag]
summary: What to do when consumer lag keeps growing.
category: ops
---
# Kafka consumer lag runbook

## Check
Run kafka-consumer-groups --describe and look at LAG per partition.
"""


def _err(r: httpx.Response, status: int, code: str | None = None) -> dict:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error", "message"} and body["message"]
    if code:
        assert body["error"] == code
    return body


async def test_health_and_docs(client) -> None:  # noqa: ANN001
    h = (await client.get("/healthz")).json()
    assert (
        h["status"] == "ok"
        and h["database"] == {"kind": "sqlite", "ok": True, "reachable": True, "writable": True}
        and h["vectorStore"]["ok"]
    )
    assert h["chatModel"] == "offline" and h["documents"] >= 6
    spec = (await client.get("/openapi.json")).json()
    assert "/api/chat_stream" in spec["paths"] and "/api/documents/upload" in spec["paths"]


async def test_chat_and_multi_turn(client) -> None:  # noqa: ANN001
    r = await client.post("/api/chat", json={"question": "ERR_TIMEOUT 是什么意思？"})
    body = r.json()
    assert r.status_code == 200 and "api/payment-errors.md" in body["answer"] and body["sessionId"]
    second = (
        await client.post(
            "/api/chat",
            json={"id": body["threadId"], "question": "Flyway checksum mismatch 怎么修？"},
        )
    ).json()
    assert second["threadId"] == body["threadId"] and second["sessionId"] != body["sessionId"]
    state = await client.app.state.services.graphs.chat.aget_state(
        {"configurable": {"thread_id": body["threadId"]}}
    )
    assert len(state.values["messages"]) == 4  # two turns of history from the checkpointer


async def test_chat_stream_events(client) -> None:  # noqa: ANN001
    r = await client.post("/api/chat_stream", json={"question": "HikariCP 连接池超时怎么办"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse_events(r.text)
    kinds = [e for e, _ in events]
    assert kinds[0] == "session" and kinds[-1] == "done"
    assert {"node", "tool_call", "tool_result", "token", "answer"} <= set(kinds)
    result = next(d for e, d in events if e == "tool_result")
    assert result["relevanceLevel"] == "PRECISE" and result["retrievedDomainsThisSession"] == [
        "infrastructure"
    ]
    tokens = "".join(d["text"] for e, d in events if e == "token")
    assert tokens == events[-1][1]["answer"]


async def test_ai_ops_stream_ends_with_the_report(client) -> None:  # noqa: ANN001
    events = sse_events((await client.post("/api/ai_ops", json={})).text)
    done = events[-1]
    assert (
        done[0] == "done"
        and "## 活跃告警清单" in done[1]["answer"]
        and "## 结论" in done[1]["answer"]
    )
    assert any(e == "tool_call" and d["tool"] == "query_prometheus_alerts" for e, d in events)


async def test_feedback_contract(client) -> None:  # noqa: ANN001
    sid = (
        await client.post("/api/chat", json={"question": "Redis OOM command not allowed"})
    ).json()["sessionId"]
    _err(
        await client.post("/api/feedback", json={"sessionId": sid, "feedback": "great"}),
        400,
        "invalid_feedback",
    )
    _err(
        await client.post("/api/feedback", json={"sessionId": "nope", "feedback": "useful"}),
        404,
        "session_not_found",
    )
    _err(await client.post("/api/feedback", json={"feedback": "useful"}), 422)
    first, second = await asyncio.gather(
        client.post("/api/feedback", json={"sessionId": sid, "feedback": "useful"}),
        client.post("/api/feedback", json={"sessionId": sid, "feedback": "useful"}),
    )
    assert first.json()["caseId"] == second.json()["caseId"] and first.json()["success"]
    detail = (await client.get(f"/api/sessions/{sid}")).json()
    assert detail["session"]["feedback"] == "useful"


async def test_knowledge_lookup_stats_and_import_job(client) -> None:  # noqa: ANN001
    hit = (
        await client.post(
            "/api/knowledge/lookup", json={"query": "database connection pool timeout"}
        )
    ).json()
    assert hit["result"]["found"] and hit["scores"]["layer"] == "L1"
    top = hit["scores"]["l1Scores"][0]
    assert {"denseSimilarity", "bm25Score", "rrf", "denseRank", "bm25Rank", "valid"} <= set(top)
    stats = (await client.get("/api/knowledge/stats")).json()
    assert stats["byStatus"]["INDEXED"] >= 6 and stats["vectors"] > 0
    r = await client.post("/api/knowledge/init", params={"force": "true"})
    assert r.status_code == 202
    job_id = r.json()["jobId"]
    _err(await client.post("/api/knowledge/init"), 409, "import_in_progress")
    for _ in range(600):
        job = (await client.get(f"/api/knowledge/jobs/{job_id}")).json()
        if job["status"] != "running":
            break
        await asyncio.sleep(0.2)
    assert job["status"] == "done" and job["processed"] == job["total"] >= 6
    assert all(f["status"] == "INDEXED" for f in job["files"])
    _err(await client.get("/api/knowledge/jobs/unknown"), 404)
    assert {d["name"] for d in (await client.get("/api/domains")).json()} >= {
        "api",
        "infrastructure",
    }


async def test_knowledge_lookup_takes_a_firing_alert(client) -> None:  # noqa: ANN001
    alert = {
        "labels": {
            "alertname": "OrdersDbPoolExhausted",
            "namespace": "orders",
            "pod": "orders-api-7c9f8d6b5-x2kqv",
            "instance": "10.4.2.17:8080",
        },
        "annotations": {
            "description": "HikariPool-1 - Connection is not available, request timed out after "
            "30000ms on orders/orders-api-7c9f8d6b5-x2kqv (10.4.2.17:8080)"
        },
    }
    r = await client.post("/api/knowledge/lookup", json={"alert": alert})
    body = r.json()
    assert r.status_code == 200, body
    assert body["result"]["found"]
    assert body["result"]["primary"]["source"] == "infrastructure/mysql-connection-pool.md"
    scores = body["scores"]
    assert scores["alert"]["alertname"] == "OrdersDbPoolExhausted"
    assert "orders-api-7c9f8d6b5-x2kqv" not in scores["queryText"]  # a label value: context
    assert "orders/orders-api-7c9f8d6b5-x2kqv" in scores["contextValues"]

    bad = await client.post("/api/knowledge/lookup", json={"alert": {"labels": {"pod": "x"}}})
    assert "alertname" in _err(bad, 422, "invalid_request")["message"]
    bad = await client.post(
        "/api/knowledge/lookup", json={"alert": {"alertname": "A", "labels": {"n": ["x"]}}}
    )
    assert "labels" in _err(bad, 422, "invalid_request")["message"]
    empty = await client.post("/api/knowledge/lookup", json={"query": "  "})
    assert "query" in _err(empty, 422, "invalid_request")["message"]


async def test_documents_lifecycle(client) -> None:  # noqa: ANN001
    files = {"file": ("../../etc/kafka-lag.md", RUNBOOK, "text/markdown")}
    r = await client.post("/api/documents/upload", files=files, data={"category": "ops"})
    assert r.status_code == 201, r.text
    doc = r.json()["document"]
    assert (
        doc["filePath"] == "ops/kafka-lag.md" and doc["status"] == "INDEXED"
    )  # traversal stripped
    _err(
        await client.post("/api/documents/upload", files=files, data={"category": "ops"}),
        409,
        "document_exists",
    )
    listing = (await client.get("/api/documents", params={"category": "ops", "q": "kafka"})).json()
    assert [d["docId"] for d in listing["items"]] == [doc["docId"]]
    page = (await client.get("/api/documents", params={"pageSize": 2, "page": 2})).json()
    assert page["page"] == 2 and len(page["items"]) == 2 and page["total"] >= 7
    detail = (await client.get(f"/api/documents/{doc['docId']}")).json()
    assert detail["chunks"] and detail["chunks"][0]["breadcrumb"].startswith(
        "Kafka consumer lag runbook"
    )
    found = (await client.post("/api/knowledge/lookup", json={"query": "KAFKA_LAG_QX7"})).json()
    assert found["result"]["relevanceLevel"] == "PRECISE"
    assert (await client.post(f"/api/documents/{doc['docId']}/reindex")).json()["result"][
        "status"
    ] == "INDEXED"
    assert (await client.delete(f"/api/documents/{doc['docId']}")).json() == {
        "deleted": doc["docId"]
    }
    _err(await client.get(f"/api/documents/{doc['docId']}"), 404, "document_not_found")
    _err(await client.delete(f"/api/documents/{doc['docId']}"), 404)
    gone = (await client.post("/api/knowledge/lookup", json={"query": "KAFKA_LAG_QX7"})).json()
    assert gone["result"]["relevanceLevel"] != "PRECISE"


async def test_upload_rejections(client) -> None:  # noqa: ANN001
    limit = client.app.state.settings.max_upload_mb * 1024 * 1024
    _err(
        await client.post(
            "/api/documents/upload",
            files={"file": ("x.exe", b"MZ", "application/octet-stream")},
            data={"category": "ops"},
        ),
        415,
        "unsupported_file_type",
    )
    _err(
        await client.post(
            "/api/documents/upload",
            files={"file": ("x.md", b"# x", "text/markdown")},
            data={"category": "../../etc"},
        ),
        400,
        "invalid_upload",
    )
    _err(
        await client.post(
            "/api/documents/upload",
            files={"file": ("..", b"# x", "text/markdown")},
            data={"category": "ops"},
        ),
        400,
    )
    _err(await client.post("/api/documents/upload", data={"category": "ops"}), 422)
    big = b"#" * (limit + 200 * 1024)
    _err(
        await client.post(
            "/api/documents/upload",
            files={"file": ("big.md", big, "text/markdown")},
            data={"category": "ops"},
        ),
        413,
        "file_too_large",
    )

    async def chunked():  # noqa: ANN202 - no Content-Length: counted as it streams
        boundary = b'--b\r\nContent-Disposition: form-data; name="file"; filename="big.md"\r\n\r\n'
        yield boundary
        for _ in range(limit // (1024 * 1024) + 2):
            yield b"x" * (1024 * 1024)
        yield b"\r\n--b--\r\n"

    r = await client.post(
        "/api/documents/upload",
        content=chunked(),
        headers={"content-type": "multipart/form-data; boundary=b"},
    )
    _err(r, 413, "file_too_large")
    stats = (await client.get("/api/knowledge/stats")).json()
    assert "big.md" not in str(stats)


async def test_wrong_content_type_and_bad_bodies(client) -> None:  # noqa: ANN001
    _err(
        await client.post(
            "/api/chat",
            content=b"question=x",
            headers={"content-type": "application/x-www-form-urlencoded"},
        ),
        415,
    )
    _err(await client.post("/api/chat", json={"question": ""}), 422)
    _err(
        await client.post(
            "/api/chat", content=b"{not json", headers={"content-type": "application/json"}
        ),
        422,
    )
    _err(await client.post("/api/chat", json={"question": "x", "id": "../../etc"}), 422)
    _err(await client.get("/api/sessions", params={"status": "DONE"}), 422)
    _err(await client.get("/api/documents", params={"pageSize": 0}), 422)
    _err(await client.get("/nope"), 404)


async def test_sessions_list_detail_checkpoints_and_replay(client) -> None:  # noqa: ANN001
    sid = (await client.post("/api/chat", json={"question": "maxmemory-policy 怎么选"})).json()[
        "sessionId"
    ]
    await client.app.state.runner.drain()
    listing = (await client.get("/api/sessions", params={"pageSize": 5})).json()
    assert listing["items"][0]["sessionId"] == sid and listing["items"][0]["evidenceScore"] == 65
    detail = (await client.get(f"/api/sessions/{sid}")).json()
    assert detail["steps"] and detail["invocations"][0]["relevanceLevel"] == "PRECISE"
    _err(await client.get("/api/sessions/unknown"), 404, "session_not_found")
    checkpoints = (await client.get(f"/api/sessions/{sid}/checkpoints")).json()
    assert checkpoints[0]["source"] == "input"
    report = (await client.post(f"/api/sessions/{sid}/replay", json={"mode": "rerun"})).json()
    assert report["identical"] is True and report["replaySessionId"]
    mid = checkpoints[2]["checkpointId"]
    rerun = (
        await client.post(
            f"/api/sessions/{sid}/replay", json={"mode": "checkpoint", "checkpointId": mid}
        )
    ).json()
    assert rerun["status"] == "SUCCESS"
    _err(
        await client.post(f"/api/sessions/{sid}/replay", json={"mode": "checkpoint"}),
        400,
        "checkpoint_required",
    )
    _err(await client.post("/api/sessions/unknown/replay", json={}), 404)


@pytest.fixture
async def keyed(services):  # noqa: ANN001
    from server import create_app

    app = create_app(
        settings=services.settings.model_copy(update={"api_key": "s3cret"}), services=services
    )
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test", timeout=60
        ) as c,
    ):
        yield c


async def test_api_key_guards_mutating_endpoints(keyed) -> None:  # noqa: ANN001
    _err(await keyed.post("/api/chat", json={"question": "x"}), 401, "api_key_required")
    _err(
        await keyed.post("/api/chat", json={"question": "x"}, headers={"X-API-Key": "wrong"}),
        401,
        "invalid_api_key",
    )
    _err(await keyed.delete("/api/documents/whatever"), 401)
    _err(
        await keyed.post(
            "/api/documents/upload",
            files={"file": ("a.md", b"# a", "text/markdown")},
            data={"category": "ops"},
        ),
        401,
    )
    _err(await keyed.post("/api/knowledge/init"), 401)
    # With a key, reads are guarded too (auth.protect-reads defaults on); pages and /healthz stay open.
    _err(await keyed.get("/api/sessions"), 401, "api_key_required")
    assert (await keyed.get("/api/sessions", headers={"X-API-Key": "s3cret"})).status_code == 200
    assert (await keyed.get("/healthz")).status_code == 200
    assert (await keyed.get("/documents")).status_code == 200
    ok = await keyed.post(
        "/api/chat", json={"question": "ERR_TIMEOUT"}, headers={"X-API-Key": "s3cret"}
    )
    assert ok.status_code == 200


@pytest.fixture
async def mysql_client(tmp_path_factory, embeddings):  # noqa: ANN001
    from server import create_app

    async with started_services(
        tmp_path_factory.mktemp("api-mysql"), embeddings, mysql=True
    ) as svc:
        app = create_app(services=svc)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://test", timeout=120
            ) as c,
        ):
            yield c


@pytest.mark.mysql
async def test_key_paths_on_mariadb(mysql_client) -> None:  # noqa: ANN001
    c = mysql_client
    h = (await c.get("/healthz")).json()
    assert h["database"] == {"kind": "mysql", "ok": True, "reachable": True, "writable": True}
    chat = (await c.post("/api/chat", json={"question": "ERR_TIMEOUT 是什么意思？"})).json()
    assert "api/payment-errors.md" in chat["answer"]
    stream = sse_events(
        (
            await c.post(
                "/api/chat_stream", json={"id": chat["threadId"], "question": "连接池超时怎么办"}
            )
        ).text
    )
    assert stream[-1][0] == "done"
    fb = (
        await c.post("/api/feedback", json={"sessionId": chat["sessionId"], "feedback": "useful"})
    ).json()
    assert fb["caseId"]
    detail = (await c.get(f"/api/sessions/{chat['sessionId']}")).json()
    assert (
        detail["session"]["feedback"] == "useful"
        and detail["invocations"][0]["relevanceLevel"] == "PRECISE"
    )
    up = await c.post(
        "/api/documents/upload",
        files={"file": ("kafka-lag.md", RUNBOOK, "text/markdown")},
        data={"category": "ops"},
    )
    assert up.status_code == 201 and up.json()["document"]["title"] == "Kafka consumer lag runbook"
    listing = (await c.get("/api/documents", params={"q": "kafka"})).json()
    assert listing["total"] == 1
