"""The seed's document fields over HTTP (fault source, API name, version, chunk size and overlap),
filtering on them, and disabling a document without deleting it — against the real offline stack
(SQLite, Milvus Lite, the packaged MiniLM)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from api.jobs import ImportJob, JobRegistry
from tests.support.kb import started_services

UPLOAD = "/api/documents/upload"


def runbook(keyword: str, *, front: str = "", paragraphs: int = 2) -> bytes:
    body = "\n\n".join(
        f"Step {i}: check the {keyword} relay, drain the queue, restart the worker and confirm "
        f"that the backlog of {keyword} messages shrinks within five minutes of the restart."
        for i in range(paragraphs)
    )
    return (
        f"---\ntitle: {keyword} runbook\nkeywords: [{keyword}]\nsummary: What to do about "
        f"{keyword}.\ncovers: [relay]\nwhen_to_retrieve: {keyword} alerts\n{front}---\n"
        f"# {keyword} runbook\n\n## Steps\n\n{body}\n"
    ).encode()


async def upload(client: httpx.AsyncClient, name: str, raw: bytes, **form: str) -> httpx.Response:
    files = {"file": (name, raw, "text/markdown")}
    return await client.post(UPLOAD, files=files, data={"category": "metatest", **form})


def error(r: httpx.Response, status: int, code: str) -> str:
    assert r.status_code == status, r.text
    assert r.json()["error"] == code, r.text
    return r.json()["message"]


async def test_upload_keeps_the_seed_fields_and_they_filter_the_list(client, services) -> None:  # noqa: ANN001
    fields = {"faultSource": "mq-relay", "apiName": "/api/relay/drain", "version": "v2.3"}
    r = await upload(client, "relay.md", runbook("RELAYQX1"), **fields)
    assert r.status_code == 201, r.text
    doc = r.json()["document"]
    plain = (await upload(client, "plain.md", runbook("PLAINQX2"))).json()["document"]
    try:
        assert {k: doc[k] for k in fields} == fields
        window = services.kb.store.embeddings.max_tokens  # e5: 512 less <s>, </s> and "passage:"
        default = services.settings.retrieval.chunk_size  # 500: fits e5's window, not MiniLM's
        assert doc["enabled"] is True and doc["chunkSize"] == min(default, window)
        assert plain["version"] == "v1.0" and plain["faultSource"] is None

        ids = lambda resp: [d["docId"] for d in resp.json()["items"]]  # noqa: E731
        listed = await client.get(
            "/api/documents",
            params={"faultSource": "mq-relay", "category": "metatest", "status": "INDEXED"},
        )
        assert ids(listed) == [doc["docId"]]
        assert ids(await client.get("/api/documents/faultSource/mq-relay")) == [doc["docId"]]
        none = await client.get(
            "/api/documents", params={"faultSource": "mq-relay", "category": "x"}
        )
        assert none.json()["total"] == 0
        sources = (await client.get("/api/documents/faultSources")).json()
        assert {"faultSource": "mq-relay", "documents": 1} in sources

        detail = (await client.get(f"/api/documents/{doc['docId']}")).json()
        assert detail["apiName"] == "/api/relay/drain"
        chunks = detail["chunks"]
        assert chunks and all(c["tokenCount"] > 0 for c in chunks)
        # The breadcrumb is shown apart; the text no longer repeats it.
        assert all(not c["text"].startswith(c["breadcrumb"]) for c in chunks)
    finally:
        for d in (doc, plain):
            await client.delete(f"/api/documents/{d['docId']}")


async def test_chunk_params_change_the_chunks_and_bad_ones_are_refused(client, services) -> None:  # noqa: ANN001
    raw = runbook("CHUNKQX3", paragraphs=12)
    default = (await upload(client, "chunks-default.md", raw)).json()["document"]
    small = await upload(client, "chunks-small.md", raw, chunkSize="64", chunkOverlap="0")
    assert small.status_code == 201, small.text
    small_doc = small.json()["document"]
    capped: list[dict] = []
    try:
        assert (small_doc["chunkSize"], small_doc["chunkOverlap"]) == (64, 0)
        assert small_doc["chunkCount"] > default["chunkCount"] + 3
        body = lambda d: [c for c in d["chunks"] if c["index"] > 0]  # noqa: E731
        small_detail = (await client.get(f"/api/documents/{small_doc['docId']}")).json()
        default_detail = (await client.get(f"/api/documents/{default['docId']}")).json()
        assert max(c["tokenCount"] for c in body(default_detail)) > 100
        assert max(c["tokenCount"] for c in body(small_detail)) <= 64 + 16  # + breadcrumb

        # Above the model's window: taken, capped to it, with a warning naming both numbers.
        window = services.kb.store.embeddings.max_tokens
        big = await upload(client, "chunks-big.md", raw, chunkSize="1000", chunkOverlap="50")
        assert big.status_code == 201, big.text
        big_doc = big.json()["document"]
        capped.append(big_doc)
        assert (big_doc["chunkSize"], big_doc["chunkOverlap"]) == (window, 50)
        warned = " ".join(big.json()["result"]["warnings"])
        assert "chunkSize 1000" in warned and f"{window}-token window" in warned, warned
        tiny = await upload(client, "chunks-tiny.md", raw, chunkSize="8")
        assert "below 32" in error(tiny, 422, "invalid_chunk_params")
        overlap = await upload(client, "chunks-overlap.md", raw, chunkSize="64", chunkOverlap="40")
        assert "0–32" in error(overlap, 422, "invalid_chunk_params")
        error(await upload(client, "chunks-text.md", raw, chunkSize="many"), 422, "invalid_request")
        listed = await client.get("/api/documents", params={"q": "chunks-tiny"})
        assert listed.json()["total"] == 0  # nothing was stored
    finally:
        for d in (default, small_doc, *capped):
            await client.delete(f"/api/documents/{d['docId']}")


async def test_upload_form_wins_over_frontmatter_and_is_kept_on_reindex(client) -> None:  # noqa: ANN001
    front = "fault_source: kafka\napiName: /api/consume\nversion: v3\nchunk_size: 80\n"
    both = await upload(client, "front.md", runbook("FRONTQX4", front=front), faultSource="relay")
    assert both.status_code == 201, both.text
    doc = both.json()["document"]
    try:
        # The form's fault source wins (with a warning); the frontmatter gives the rest.
        assert (doc["faultSource"], doc["apiName"], doc["version"], doc["chunkSize"]) == (
            "relay",
            "/api/consume",
            "v3",
            80,
        )
        warnings = both.json()["result"]["warnings"]
        assert any("faultSource 'relay' overrides" in w and "'kafka'" in w for w in warnings)
        again = await client.post(f"/api/documents/{doc['docId']}/reindex")
        assert again.json()["document"]["faultSource"] == "relay"
        bad = await upload(client, "front-bad.md", runbook("FRONTQX5", front="chunk_size: ten\n"))
        assert "chunk_size" in error(bad, 422, "invalid_document")
    finally:
        await client.delete(f"/api/documents/{doc['docId']}")


async def test_a_disabled_document_is_not_found_and_comes_back_without_reembedding(
    client,  # noqa: ANN001
    services,  # noqa: ANN001
) -> None:
    r = await upload(client, "toggle.md", runbook("TOGGLEQX6"))
    doc = r.json()["document"]
    path = doc["filePath"]

    async def lookup(query: str) -> str:
        body = (await client.post("/api/knowledge/lookup", json={"query": query})).json()
        return json.dumps(body, ensure_ascii=False)

    try:
        assert path in await lookup("TOGGLEQX6")  # L0
        assert path in await lookup("drain the queue backlog messages shrinks restart")  # L1
        off = await client.patch(f"/api/documents/{doc['docId']}", json={"enabled": False})
        assert off.status_code == 200 and off.json()["enabled"] is False
        assert path not in await lookup("TOGGLEQX6")
        assert path not in await lookup("drain the queue backlog messages shrinks restart")
        # Filtered in Milvus itself, so its chunks take no candidate's place.
        store, query = services.kb.store, "TOGGLEQX6 relay drain queue"
        vector = await asyncio.to_thread(store.embeddings.embed_query, query)
        hits = await asyncio.to_thread(
            store.search, query, vector, exclude=services.kb.catalog.disabled
        )
        assert doc["docId"] in services.kb.catalog.disabled
        assert all(h.fields["doc_id"] != doc["docId"] for h in hits.dense + hits.bm25)
        disabled = await client.get("/api/documents", params={"enabled": "false"})
        assert [d["docId"] for d in disabled.json()["items"]] == [doc["docId"]]
        health = (await client.get("/healthz")).json()
        assert health["problems"] == []  # disabled is not "out of step"

        on = await client.patch(f"/api/documents/{doc['docId']}", json={"enabled": True})
        assert on.json()["enabled"] is True
        assert on.json()["indexedAt"] == doc["indexedAt"]  # not imported again
        assert path in await lookup("TOGGLEQX6")

        error(
            await client.patch("/api/documents/nope", json={"enabled": False}),
            404,
            "document_not_found",
        )
        bad = await client.patch(f"/api/documents/{doc['docId']}", json={"enabled": "maybe"})
        assert "enabled" in error(bad, 422, "invalid_request")
        extra = await client.patch(f"/api/documents/{doc['docId']}", json={"title": "x"})
        error(extra, 422, "invalid_request")
    finally:
        await client.delete(f"/api/documents/{doc['docId']}")


async def test_given_covers_and_when_to_retrieve_raise_no_generated_warning(client) -> None:  # noqa: ANN001
    full = await upload(client, "full.md", runbook("FULLQX7"))
    partial_raw = runbook("PARTQX8").replace(b"when_to_retrieve: PARTQX8 alerts\n", b"")
    partial = await upload(client, "partial.md", partial_raw)
    try:
        assert not any("generated" in w for w in full.json()["result"]["warnings"])
        warnings = partial.json()["result"]["warnings"]
        assert any(w.startswith("when_to_retrieve generated") for w in warnings), warnings
    finally:
        for r in (full, partial):
            await client.delete(f"/api/documents/{r.json()['document']['docId']}")


async def test_a_second_import_names_the_running_job(services) -> None:  # noqa: ANN001
    jobs = JobRegistry(services.kb.ingestion)
    jobs.jobs["abc123"] = ImportJob("abc123", False)  # a job that is still running
    try:
        jobs.start(force=False)
    except Exception as exc:  # noqa: BLE001
        assert "/api/knowledge/jobs/abc123" in str(exc) and "{id}" not in str(exc)
    else:
        raise AssertionError("a second import started")


@pytest.fixture
async def mysql_stack(tmp_path_factory, embeddings):  # noqa: ANN001
    from server import create_app

    base = tmp_path_factory.mktemp("meta-mysql")
    async with started_services(base, embeddings, mysql=True) as svc:
        app = create_app(services=svc)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://test", timeout=120
            ) as c,
        ):
            yield c, svc


@pytest.mark.mysql
async def test_fields_filter_and_disable_on_mariadb(mysql_stack) -> None:  # noqa: ANN001
    client, svc = mysql_stack
    r = await upload(client, "maria.md", runbook("MARIAQX9"), faultSource="故障源甲", version="v9")
    assert r.status_code == 201, r.text
    doc = r.json()["document"]
    listed = await client.get("/api/documents/faultSource/故障源甲")
    assert [d["docId"] for d in listed.json()["items"]] == [doc["docId"]]
    assert (await client.patch(f"/api/documents/{doc['docId']}", json={"enabled": False})).json()[
        "enabled"
    ] is False
    found = (await client.post("/api/knowledge/lookup", json={"query": "MARIAQX9"})).json()
    assert doc["filePath"] not in json.dumps(found, ensure_ascii=False)
    # A restart (the catalog rebuilt from the rows) keeps it out; the stores still agree.
    await svc.kb.loader.load()
    assert doc["docId"] in svc.kb.catalog.disabled and svc.kb.catalog.get(doc["docId"]) is None
    assert (await client.get("/healthz")).json()["problems"] == []
    enabled = await client.get("/api/documents", params={"enabled": "true", "q": "maria"})
    assert enabled.json()["total"] == 0
