"""PRECISE from L0 alone only when the query names one runbook alone, and a product named only
inside label values does not make a platform runbook "another technology" (issue 17). No services:
a catalog, L0 and bodies in memory."""

from __future__ import annotations

from retrieval.judging.calibration import OTHER_TECHNOLOGY, capped
from retrieval.judging.entities import missing_in
from retrieval.judging.relevance import RelevanceLevel, level_for
from retrieval.l0.catalog import DocInfo, DocumentCatalog
from retrieval.lookup.query_input import prepare
from retrieval.lookup.service import LookupService
from retrieval.parsing.terms import document_terms

BODIES = {
    "infrastructure/redis-config.md": "Redis 配置：maxmemory-policy，READONLY 与 CLUSTERDOWN 报错的含义。",
    "redis/redis-cluster-state-fail.md": "Redis 集群 cluster_state:fail，客户端报 CLUSTERDOWN，槽位无主：修复槽位。",
    "api/payment-errors.md": "支付网关错误码：ERR_TIMEOUT 表示渠道超时，先查单再重试。",
    "api/payment-retry.md": "支付接口超时后的安全重试：幂等键，先查单。",
    "node/NodeFilesystemReadOnly.md": "文件系统变成只读：Read-only file system，检查 dmesg。",
}
KEYWORDS = {
    "infrastructure/redis-config.md": ("Redis", "CLUSTERDOWN", "READONLY"),
    "api/payment-errors.md": ("ERR_TIMEOUT",),
}


def _service() -> LookupService:
    docs = [
        DocInfo(
            f"d{i}",
            path,
            path.rsplit("/", 1)[-1].removesuffix(".md"),
            path.split("/", 1)[0],
            keywords=KEYWORDS.get(path, ()),
            terms=frozenset(document_terms(body)),
        )
        for i, (path, body) in enumerate(BODIES.items())
    ]
    catalog = DocumentCatalog()
    catalog.replace_all(docs)
    # no vector store: what L1 would add is not the point, the claim of PRECISE is
    return LookupService(catalog, None, body_loader=lambda d: BODIES.get(d.file_path))


def test_a_keyword_another_runbook_explains_is_not_precise() -> None:
    svc = _service()
    out = svc.lookup("redis 集群挂了一个主节点，客户端全报 CLUSTERDOWN")
    assert out.payload["relevanceLevel"] != "PRECISE"
    assert out.artifact["layer"] == "L0+L1"
    # the runbook whose keyword it is still comes first
    assert out.payload["primary"]["source"] == "infrastructure/redis-config.md"


def test_a_keyword_only_its_runbook_holds_stays_precise_with_l1_skipped() -> None:
    out = _service().lookup("ERR_TIMEOUT")
    assert out.payload["relevanceLevel"] == "PRECISE"
    assert out.payload["primary"]["source"] == "api/payment-errors.md"
    assert out.artifact["layer"] == "L0"


def test_a_runbook_named_by_its_file_name_stays_precise() -> None:
    out = _service().lookup("NodeFilesystemReadOnly")
    assert out.payload["relevanceLevel"] == "PRECISE"
    assert out.payload["primary"]["source"] == "node/NodeFilesystemReadOnly.md"


def test_a_product_inside_a_label_value_is_context() -> None:
    payload = prepare("PVC middleware/data-kafka-2 已使用 88.5%，预计 3 天内写满。")
    assert payload.entities.technologies == {"kafka"} and payload.entities.in_context == {"kafka"}
    said = prepare("kafka 的 PVC 快写满了")
    assert said.entities.technologies == {"kafka"} and not said.entities.in_context


def test_a_platform_runbook_is_reference_when_the_product_is_only_context() -> None:
    pvc_terms = frozenset(document_terms("PersistentVolume 使用率过高，扩容 PVC，清理数据"))
    context = prepare("PVC middleware/data-kafka-2 已使用 88.5%，预计 3 天内写满。").entities
    platform = missing_in(context, pvc_terms, "PersistentVolumeFillingUp PV 空间不足")
    assert platform.other_technology and platform.context_technology
    # a runbook named after another product stays another technology's
    redis = missing_in(context, pvc_terms, "RedisMemoryHigh Redis 内存")
    assert not redis.context_technology
    said = missing_in(prepare("kafka 的 PVC 快写满了").entities, pvc_terms, "PV 空间不足")
    assert not said.context_technology

    x = {"tech_missing": 1.0, "tech_in_context": 1.0}
    conf, rule = capped(0.93, x, 0.75, 0.5)
    assert rule == OTHER_TECHNOLOGY and level_for(conf) is RelevanceLevel.REFERENCE
    conf, rule = capped(0.93, {"tech_missing": 1.0}, 0.75, 0.5)
    assert level_for(conf) is RelevanceLevel.NONE


def test_l1_confirms_only_with_its_own_evidence_for_the_first_document() -> None:
    from retrieval.judging.judge import Judged
    from retrieval.l1.fusion import DocHit, FusedHit
    from retrieval.lookup.l0_claim import agrees

    doc = _service().catalog.by_path("infrastructure/redis-config.md")
    chunk = FusedHit("c1", 0.03, {"file_path": doc.file_path})
    first = Judged(DocHit(doc.file_path, chunks=[chunk]), RelevanceLevel.REFERENCE, 0.9)
    other = Judged(DocHit("redis/redis-cluster-state-fail.md", chunks=[chunk]), first.level, 0.9)
    assert agrees(doc, [first, other])
    assert not agrees(doc, [other, first])  # L1 puts another runbook first
    l0_only = Judged(DocHit(doc.file_path), RelevanceLevel.REFERENCE, None)
    assert not agrees(doc, [l0_only])  # L1 down: nothing confirms the keyword
    none = Judged(DocHit(doc.file_path, chunks=[chunk]), RelevanceLevel.NONE, 0.2)
    assert not agrees(doc, [none])


def test_when_l1_finds_nothing_the_keywords_runbook_is_reference_and_first() -> None:
    from retrieval.judging.judge import Judged
    from retrieval.l1.fusion import DocHit
    from retrieval.lookup.l0_claim import keyword_floor

    doc = _service().catalog.by_path("api/payment-retry.md")
    other = Judged(DocHit("api/payment-errors.md"), RelevanceLevel.NONE, 0.4)
    mine = Judged(DocHit(doc.file_path), RelevanceLevel.NONE, 0.3)
    out = keyword_floor(doc, [other, mine])
    assert out[0] is mine and mine.level is RelevanceLevel.REFERENCE  # found, not PRECISE
    assert other.level is RelevanceLevel.NONE
    found = Judged(DocHit("api/payment-errors.md"), RelevanceLevel.REFERENCE, 0.6)
    assert keyword_floor(
        doc, [found, mine := Judged(DocHit(doc.file_path), RelevanceLevel.NONE, 0.3)]
    ) == [
        found,
        mine,
    ]  # L1 answers with something: its ranking stands
