"""A question with several symptoms is split into aspects; one symptom with commas is not."""

from __future__ import annotations

import pytest

from retrieval.judging.judge import Judged
from retrieval.judging.relevance import RelevanceLevel as L
from retrieval.l1.fusion import DocHit
from retrieval.lookup.aspect_results import combine
from retrieval.lookup.aspects import split_aspects


@pytest.mark.parametrize(
    ("query", "aspects"),
    [
        (
            "Redis 内存快满了，订单服务又报连接超时，怎么排查",
            ["Redis 内存快满了", "订单服务又报连接超时 怎么排查"],
        ),
        ("Redis 内存满了同时订单服务连接池超时", ["Redis 内存满了", "同时订单服务连接池超时"]),
        (
            "Redis used memory near maxmemory, Kafka consumer lag growing on orders",
            ["Redis used memory near maxmemory", "Kafka consumer lag growing on orders"],
        ),
        (
            "Redis memory is almost full and also the orders API times out on its DB pool",
            ["Redis memory is almost full", "also the orders API times out on its DB pool"],
        ),
    ],
)
def test_several_symptoms(query: str, aspects: list[str]) -> None:
    assert split_aspects(query) == aspects


@pytest.mark.parametrize(
    "query",
    [
        "Kafka 有个 broker 磁盘快满了，怎么安全地腾出空间",
        "nginx 返回 502 和 504 有什么区别，各自该往哪查",
        "heap dump 怎么抓，抓下来以后用什么工具分析",
        "ES 查询越来越慢，数据节点的老年代一直在做 GC",
        "发版之后新的 pod 起不来，一直在重启，老版本的还在跑",
        "值班群里收不到告警通知了，但是 Prometheus 上告警明明是 firing",
        "background jobs stopped running, the celery queue has thousands of pending tasks",
        "FATAL:  sorry, too many clients already",
        "KubePodCrashLooping",
    ],
)
def test_one_symptom_is_not_split(query: str) -> None:
    assert split_aspects(query) == [query]


def j(path: str, level: L, conf: float) -> Judged:
    return Judged(DocHit(path), level, None, conf, conf)


def test_each_aspect_shows_its_best_document_with_its_own_level() -> None:
    whole = [j("mysql-pool", L.NONE, 0.3), j("redis-mem", L.NONE, 0.28)]
    aspects = [
        (
            "Redis 内存快满了",
            [j("redis-mem", L.HIGHLY_RELEVANT, 0.9), j("redis-cfg", L.REFERENCE, 0.6)],
        ),
        ("订单服务又报连接超时", [j("mysql-pool", L.REFERENCE, 0.6)]),
    ]
    out = combine(whole, aspects, is_new=lambda p: True, top_k=4, floor=0.02)
    assert [(p.judged.doc.path, p.aspect) for p in out.shown] == [
        ("redis-mem", "Redis 内存快满了"),
        ("mysql-pool", "订单服务又报连接超时"),
    ]
    assert out.level is L.REFERENCE and out.unanswered == []  # the weaker aspect's level


def test_an_aspect_without_a_document_keeps_the_level_at_reference() -> None:
    whole = [j("redis-mem", L.HIGHLY_RELEVANT, 0.9)]
    aspects = [
        ("Redis 内存快满了", [j("redis-mem", L.HIGHLY_RELEVANT, 0.9)]),
        ("MongoDB 选主", [j("kafka", L.NONE, 0.1)]),
    ]
    out = combine(whole, aspects, is_new=lambda p: True, top_k=4, floor=0.02)
    assert [p.judged.doc.path for p in out.shown] == ["redis-mem"]
    assert out.level is L.REFERENCE and out.unanswered == ["MongoDB 选主"]


def test_documents_already_returned_are_skipped() -> None:
    whole = [j("redis-mem", L.HIGHLY_RELEVANT, 0.9), j("mysql-pool", L.REFERENCE, 0.6)]
    aspects = [
        ("a", [j("redis-mem", L.HIGHLY_RELEVANT, 0.9)]),
        ("b", [j("mysql-pool", L.REFERENCE, 0.6)]),
    ]
    out = combine(whole, aspects, is_new=lambda p: p != "redis-mem", top_k=4, floor=0.02)
    assert [p.judged.doc.path for p in out.shown] == ["mysql-pool"]
    assert out.unanswered == ["a"]
