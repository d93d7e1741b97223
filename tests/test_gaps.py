"""The knowledge-gap report's logic (``persistence/gaps.py``): alerts with no firm runbook grouped
by name, "not found" questions clustered, unused and stale runbooks, and the runbook draft."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from persistence import gaps
from retrieval.parsing import frontmatter


def parse_frontmatter(text: str) -> tuple[dict, str]:
    part = frontmatter.split(text)
    return frontmatter.load(part.block or "")[0], part.body


NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def row(sid: str, question: str, level: str | None, alert: str | None = None, *sources: str):
    return gaps.LookupRow(
        sid, NOW - timedelta(minutes=len(sid)), question, question, alert, level, sources
    )


def test_alerts_with_only_reference_or_nothing_are_gaps_grouped_by_name() -> None:
    rows = [
        row("a1", "analyse", "NONE", "KafkaConsumerLagHigh"),
        row("a2", "analyse", "REFERENCE", "KafkaConsumerLagHigh", "messaging/kafka.md"),
        row("a3", "analyse", "NONE", "KafkaConsumerLagHigh"),
        row("b1", "analyse", "REFERENCE", "RedisMemoryUsageHigh", "cache/redis.md"),
        row("b2", "analyse", "PRECISE", "RedisMemoryUsageHigh", "cache/redis.md"),
        row("c1", "Kafka lag?", "NONE"),  # a question, not an alert
    ]
    found = gaps.alert_gaps(rows)
    assert [(g.key, g.count) for g in found] == [("KafkaConsumerLagHigh", 3)]
    assert found[0].detail == {
        "levels": {"NONE": 2, "REFERENCE": 1},
        "closest": ["messaging/kafka.md"],
    }
    assert [e["session_id"] for e in found[0].evidence] == ["a1", "a2", "a3"]  # newest first


def test_not_found_questions_cluster_by_wording_in_either_language() -> None:
    rows = [
        row("q1", "Kafka 消费者组重平衡怎么配置", "NONE"),
        row("q22", "如何配置 Kafka 消费者组重平衡", "NONE"),
        row("q333", "How do I rotate the etcd encryption key?", "NONE"),
        row("q4444", "rotate etcd encryption key how", "NONE"),
        row("q55555", "ERR_TIMEOUT 是什么意思", "PRECISE", None, "api/payment-errors.md"),
        row("q666666", "Redis 内存满", "NONE"),
        row("q666666", "Redis 内存满", "HIGHLY_RELEVANT", None, "cache/redis.md"),  # found later
    ]
    found = gaps.question_gaps(rows)
    assert [sorted(g.detail["variants"]) for g in found] == [
        sorted(["Kafka 消费者组重平衡怎么配置", "如何配置 Kafka 消费者组重平衡"]),
        sorted(["How do I rotate the etcd encryption key?", "rotate etcd encryption key how"]),
    ]
    assert [g.count for g in found] == [2, 2]
    assert gaps.similarity(gaps.bigrams("Redis 内存满"), gaps.bigrams("MySQL 死锁")) == 0


def test_unused_and_stale_runbooks() -> None:
    old = gaps.DocRow("cache/redis.md", "Redis", "cache", "2023-01-15", NOW)
    fresh = gaps.DocRow("api/pay.md", "Pay", "api", "v1.0", NOW - timedelta(days=3))
    aged = gaps.DocRow("db/mysql.md", "MySQL", "database", "v1.0", NOW - timedelta(days=400))
    unused = gaps.DocRow("misc/flyway.md", "Flyway", "misc", "v1.0", NOW)
    rows = [
        row("a", "x", "PRECISE", "RedisMemoryUsageHigh", "cache/redis.md"),
        row("bb", "x", "PRECISE", "RedisMemoryUsageHigh", "cache/redis.md"),
        row("ccc", "x", "PRECISE", "PaymentTimeout", "api/pay.md"),
        row("dddd", "x", "PRECISE", "PaymentTimeout", "api/pay.md"),
        row("eeeee", "x", "PRECISE", "MySQLSlow", "db/mysql.md"),  # fired once only
        row("ffffff", "x", "PRECISE", "MySQLSlow", "db/mysql.md"),
    ]
    docs = [old, fresh, aged, unused]
    assert [g.key for g in gaps.unused_runbooks(docs, rows)] == ["misc/flyway.md"]
    stale = gaps.stale_runbooks(docs, rows, NOW, stale_days=180)
    assert [g.key for g in stale] == ["cache/redis.md", "db/mysql.md"]  # the version date counts
    assert (
        stale[0].detail["alerts"] == ["RedisMemoryUsageHigh"] and stale[0].detail["age_days"] > 1000
    )
    assert gaps.stale_runbooks(docs, rows[:1], NOW, stale_days=180) == []  # one firing: not "keeps"
    assert gaps.version_date("v2024.03") == datetime(2024, 3, 1, tzinfo=UTC)
    assert gaps.version_date("v1.0") is None


def test_the_draft_is_a_runbook_skeleton_with_the_evidence() -> None:
    rows = [row("sess-kafka-1", "分析当前告警", "NONE", "KafkaConsumerLagHigh")]
    out = gaps.draft(gaps.alert_gaps(rows)[0])
    assert out["file_name"] == "KafkaConsumerLagHigh.md"
    meta, body = parse_frontmatter(out["markdown"])
    assert meta["keywords"] == ["KafkaConsumerLagHigh"] and meta["title"] == "KafkaConsumerLagHigh"
    heads = [line for line in body.splitlines() if line.startswith("## ")]
    assert heads == ["## Meaning", "## Impact", "## Diagnosis", "## Mitigation", "## Evidence"]
    assert "sess-kafka-1"[:12] in body and "分析当前告警" in body and "no runbook" in body
    q = gaps.draft(gaps.question_gaps([row("q", 'Kafka "rebalance" 配置?', "NONE")])[0])
    assert q["file_name"] == "kafka-rebalance.md"
    assert parse_frontmatter(q["markdown"])[0]["keywords"] == ['Kafka "rebalance" 配置?']
