"""The knowledge base end to end on the fixture runbooks: the default embedding model
(multilingual-e5-small), real Milvus Lite, SQLite."""

from __future__ import annotations

import asyncio

import pytest

from retrieval.l1.fusion import fuse_documents
from retrieval.lookup.memory import SessionMemory
from retrieval.lookup.service import DedupReason
from tests.support.kb import started_kb
from tests.support.payloads import all_keys

SCORE_FIELDS = {"score", "distance", "similarity", "rrf", "bm25", "dense_distance", "l1_scores"}


@pytest.fixture(scope="module")
async def kb(tmp_path_factory: pytest.TempPathFactory, embeddings):
    async with started_kb(tmp_path_factory.mktemp("kb-read"), embeddings) as (knowledge, report):
        assert report.count("INDEXED") == 6, report.as_dict()
        yield knowledge


async def test_err_timeout_is_precise_from_l0_with_l1_skipped(kb) -> None:
    out = kb.lookup("ERR_TIMEOUT")
    p = out.payload
    assert p["found"] is True
    assert p["relevanceLevel"] == "PRECISE"
    assert p["completenessHint"] == "知识库中不存在比上述结果更精准的文档"
    assert p["primary"]["source"] == "api/payment-errors.md"
    assert p["primary"]["matchType"] == "L0_EXACT"
    assert "ERR_TIMEOUT" in p["primary"]["content"] and "章节" in p["primary"]["content"]
    assert p["retrievedDomainsThisSession"] == ["api"]
    assert out.artifact["layer"] == "L0" and out.artifact["l1_scores"] == []
    assert "embed" not in out.artifact["timings_ms"]  # L1 really skipped
    assert not (all_keys(p) & SCORE_FIELDS)  # the model never sees scores


async def test_chinese_query_finds_the_pool_runbook_through_both_routes(kb) -> None:
    vector = kb.embeddings.embed_query("连接池超时")
    bm25 = kb.store.search_bm25("连接池超时", limit=5)
    assert bm25[0].fields["file_path"] == "infrastructure/mysql-connection-pool.md"
    weights = kb.lookup_service.route_weights("连接池超时")
    assert weights["dense"] == 1.0  # the multilingual model reads it: a full vote
    result = kb.store.search("连接池超时", vector)
    assert result.dense[0].fields["file_path"] == "infrastructure/mysql-connection-pool.md"
    docs = fuse_documents(result.routes(), weights)
    assert docs[0].path == "infrastructure/mysql-connection-pool.md"
    chunk = docs[0].chunks[0]
    assert "bm25" in chunk.scores and "dense_distance" in chunk.scores  # FS-1 still computed


async def test_a_chinese_paraphrase_is_found_through_the_dense_route(kb) -> None:
    # Colloquial, in other words than the runbook ("付款" / "钱扣了" for 支付 / 扣款): BM25 ranks
    # another runbook first; the dense route reads the meaning and the lookup follows it.
    question = "付款那边老是超时，钱扣了订单没变"
    bm25 = kb.store.search_bm25(question, limit=5)
    assert bm25[0].fields["file_path"] != "api/payment-errors.md"
    dense = kb.store.search_dense(kb.embeddings.embed_query(question), 5)
    assert dense[0].fields["file_path"] == "api/payment-errors.md"
    out = kb.lookup(question)
    assert out.payload["found"] is True
    assert out.payload["primary"]["source"] == "api/payment-errors.md"
    assert out.artifact["route_weights"]["dense"] == 1.0


async def test_english_question_is_answered_from_l1_with_route_scores(kb) -> None:
    out = kb.lookup("database connection pool timeout")
    p, a = out.payload, out.artifact
    assert p["found"] is True and p["primary"]["matchType"] == "L1_HYBRID"
    assert p["primary"]["source"] == "infrastructure/mysql-connection-pool.md"
    assert p["relevanceLevel"] in {"HIGHLY_RELEVANT", "REFERENCE"}
    assert a["layer"] == "L1" and a["l1_count"] >= 1
    top = a["l1_scores"][0]
    assert {"dense_distance", "dense_similarity", "bm25_score", "rrf"} <= set(top)
    assert a["l1_top_similarity"] == pytest.approx(1 - a["l1_top_score"] / 2, abs=1e-5)


async def test_unrelated_question_is_not_found(kb) -> None:
    out = kb.lookup("quarterly marketing budget for the sales team offsite")
    assert out.payload["found"] is False and out.payload["relevanceLevel"] == "NONE"
    assert out.payload["completenessHint"]
    assert out.payload["retrievedDomainsThisSession"] == []


async def test_session_never_gets_the_same_document_twice(kb) -> None:
    mem = SessionMemory()
    seen: list[str] = []
    for q in [
        "ERR_TIMEOUT",
        "ERR_CARD_DECLINED 怎么处理",
        "支付网关错误码 ERR_RATE_LIMITED",
        "HikariCP",
        "连接池超时",
    ]:
        out = kb.lookup(q, mem)
        mem = out.memory
        p = out.payload
        assert p["retrievedDomainsThisSession"] is not None
        sources = [p["primary"]["source"]] if p["primary"] else []
        sources += [s["source"] for s in p["supplement"]]
        assert not set(sources) & set(seen), (q, sources, seen)
        seen += [s for s in sources if "," not in s]
    assert mem.domains() == ["api", "infrastructure"]
    again = kb.lookup("ERR_TIMEOUT", mem).payload
    assert again["primary"] is None and "返回过" in again["message"]


async def test_dedup_and_domain_exhaustion_and_budget(kb) -> None:
    mem = SessionMemory()
    reasons = []
    for q in [
        "HikariCP",
        "Flyway",
        "maxmemory-policy",
        "HikariCP 连接池",
        "Redis",
        "Flyway",
        "HikariCP",
        "Redis",
        "ERR_TIMEOUT",
    ]:
        out = kb.lookup(q, mem)
        mem = out.memory
        reasons.append(out.artifact["dedup_reason"])
        assert out.payload["retrievedDomainsThisSession"] == mem.domains()
    # three infrastructure docs served, then the domain is exhausted, then the budget (8) refuses
    assert reasons[:3] == [None, None, None]
    assert set(reasons[3:8]) == {DedupReason.DOMAIN}
    assert reasons[8] == DedupReason.BUDGET
    assert mem.lookups == 8


async def test_concurrent_sessions_do_not_share_memory(kb) -> None:
    async def run(q: str) -> list[str]:
        mem = SessionMemory()
        out = await kb.alookup(q, mem)
        return out.memory.domains()

    results = await asyncio.gather(
        *(run(q) for q in ["ERR_TIMEOUT", "Flyway", "Spring AI", "止血"] * 3)
    )
    assert results == [["api"], ["infrastructure"], ["domain"], ["troubleshooting"]] * 3


async def test_stats(kb) -> None:
    stats = await kb.stats()
    assert stats["documents"] == 6 and stats["by_status"]["INDEXED"] == 6
    assert stats["by_category"] == {
        "api": 1,
        "domain": 1,
        "infrastructure": 3,
        "troubleshooting": 1,
    }
    assert stats["vectors"] == kb.store.count() > 6
