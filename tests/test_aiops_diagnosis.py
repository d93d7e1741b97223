"""The reasoned AI-Ops report on the shipped runbooks: the cause the evidence supports, the causes
it rules out and why, the runbook's actions for that cause, the causal chain, the noise, the
evidence ledger and the report's language. Pure: evidence objects in, report text out."""

from __future__ import annotations

import re
from typing import Any

from graph.diagnosis.facts import gather
from graph.diagnosis.judge import judge
from graph.diagnosis.runbook import parse
from graph.evidence import Evidence
from graph.ledger import Ledger, parse_block
from graph.report import build_report, report_language
from graph.rules import step_settled
from retrieval.lookup.runbook_reader import runbook_reader
from tests.support.paths import ROOT

KB = ROOT / "knowledge_base"
READ = runbook_reader(KB)


def _alert(name: str, service: str, summary: str, description: str, at: str, **labels: str) -> dict:
    return {
        "alertname": name,
        "severity": labels.pop("severity", "warning"),
        "service": service,
        "summary": summary,
        "description": description,
        "activeAt": at,
        "value": labels.pop("value", "1"),
        "labels": {"alertname": name, "service": service, **labels},
    }


def _lookup(call: str, *sources: str, level: str = "PRECISE") -> Evidence:
    primary, *rest = sources
    data = {
        "found": True,
        "relevanceLevel": level,
        "primary": {"source": primary, "content": f"《{primary}》excerpt"},
        "supplement": [{"source": s, "content": "excerpt"} for s in rest],
    }
    return Evidence("lookup_knowledge", {"query": "q"}, call, True, "{}", data)


def _logs(call: str, service: str, *lines: tuple[str, str, str]) -> Evidence:
    rows = [{"ts": ts, "service": service, "level": lv, "message": m} for ts, lv, m in lines]
    return Evidence("query_logs", {"service": service}, call, True, "{}", {"lines": rows})


def _section(report: str, heading: str) -> str:
    """The section under the heading starting ``heading``, without its heading line."""
    body = report.split(heading, 1)[1].split("\n", 1)[1]
    return body.split("\n## ", 1)[0]


REDIS = _alert(
    "RedisMemoryUsageHigh",
    "session-cache",
    "Redis 内存使用率超过 90%",
    "used_memory / maxmemory = 93%，maxmemory-policy=noeviction，写入可能返回 OOM command not allowed。",
    "2026-11-29T01:58:00Z",
    severity="critical",
)
REDIS_LOGS = _logs(
    "call-logs-redis",
    "session-cache",
    (
        "2026-11-29T01:59:12Z",
        "ERROR",
        "RedisCommandExecutionException: OOM command not allowed when used memory > 'maxmemory'.",
    ),
    (
        "2026-11-29T02:01:30Z",
        "WARN",
        "big key detected: session:bulk-export:2026-11 type=hash fields=1843220 size=611MB",
    ),
    ("2026-11-29T02:02:00Z", "INFO", "mem_fragmentation_ratio=1.04"),
)
CERT = _alert(
    "SSLCertExpiringSoon",
    "staging-ingress",
    "staging.superbiz.com 证书 13 天后过期",
    "probe_ssl_earliest_cert_expiry - time() = 13d，cert-manager 将在到期前 30 天内自动续期。",
    "2026-11-28T08:00:00Z",
    namespace="staging",
)
CERT_LOGS = _logs(
    "call-logs-cert",
    "staging-ingress",
    (
        "2026-11-28T08:00:05Z",
        "INFO",
        "cert-manager: certificate staging-tls scheduled for renewal at 2026-12-11T08:00:00Z",
    ),
)


def _redis_report() -> str:
    evidence = {
        "RedisMemoryUsageHigh": [
            _lookup("call-kb-redis", "cache/redis-memory-full.md"),
            REDIS_LOGS,
        ],
        "SSLCertExpiringSoon": [
            _lookup("call-kb-cert", "gateway/tls-certificate-expiry.md"),
            CERT_LOGS,
        ],
    }
    return build_report([REDIS, CERT], evidence, alerts_call="call-alerts", read_runbook=READ)


def test_redis_big_key_plan_is_for_the_big_key_not_defragmentation() -> None:
    report = _redis_report()
    plan = _section(report, "## 处理方案执行1")
    assert "activedefrag" not in plan  # before: the plan opened with CONFIG SET activedefrag yes
    assert "UNLINK" in plan and "noeviction" in plan
    analysis = _section(report, "## 告警根因分析1")
    # fragmentation is a candidate the evidence rules out, with the value that rules it out
    ruled = [ln for ln in analysis.splitlines() if "被证据排除" in ln]
    assert ruled and "mem_fragmentation_ratio=1.04" in ruled[0] and "> 1.5" in ruled[0]
    assert "**证据支持**" in analysis and "大 Key" in analysis


def test_an_unrelated_alert_is_named_noise_and_gets_no_plan() -> None:
    report = _redis_report()
    analysis = _section(report, "## 告警根因分析2")
    assert "噪声告警" in analysis and "env=staging" in analysis
    assert "无需处置" in _section(report, "## 处理方案执行2")
    assert "噪声告警：SSLCertExpiringSoon" in _section(report, "## 结论")


POOL = _alert(
    "HikariPoolPendingThreadsHigh",
    "order-service",
    "order-service 连接池等待线程持续偏高",
    "hikaricp_connections_pending 连续 10 分钟 > 20，active 连接数等于 maximumPoolSize=20。",
    "2026-11-29T02:09:10Z",
)
POOL_LOGS = _logs(
    "call-logs-pool",
    "order-service",
    (
        "2026-11-29T02:08:55Z",
        "WARN",
        "HikariPool-1 - Pool stats (total=20, active=20, idle=0, waiting=31)",
    ),
    (
        "2026-11-29T02:09:32Z",
        "ERROR",
        "at OrderRepository.findPendingByUser slow query 12.4s: SELECT * FROM orders",
    ),
)


def test_pool_plan_is_numbered_actions_for_the_slow_query() -> None:
    evidence = {
        POOL["alertname"]: [
            _lookup("call-kb", "infrastructure/mysql-connection-pool.md"),
            POOL_LOGS,
        ]
    }
    report = build_report([POOL], evidence, read_runbook=READ)
    plan = _section(report, "## 处理方案执行1").strip().splitlines()
    # before: it opened with the explanatory paragraph "HikariCP 维护一组到 MySQL 的长连接…"
    assert plan[0].startswith("1. **杀掉阻塞源**")
    steps = [ln for ln in plan if re.match(r"^\d+\. ", ln)]
    assert len(steps) >= 3 and not any("maximumPoolSize" in s for s in steps)
    assert "慢" in _section(report, "## 告警根因分析1").split("**结论**")[1]


def test_every_claim_cites_a_ledger_entry_with_its_source() -> None:
    report = _redis_report()
    entries = {e["id"]: e for e in parse_block(report)}
    cited = set(re.findall(r"\[(E\d+)\]", report.split("## 证据台账")[0]))
    assert cited and cited <= set(entries)
    by_kind = {e["kind"] for e in entries.values()}
    assert by_kind == {"alert", "log", "runbook"}
    big_key = next(e for e in entries.values() if "size=611MB" in e["text"])
    assert (big_key["call_id"], big_key["ts"]) == ("call-logs-redis", "2026-11-29T02:01:30Z")
    runbook = next(e for e in entries.values() if e["kind"] == "runbook" and e["section"])
    assert runbook["source"] == "cache/redis-memory-full.md" and runbook["section"]
    assert runbook["call_id"] == "call-kb-redis"


def _chain_inputs(gateway_log: str) -> tuple[list[dict], dict[str, list[Evidence]]]:
    slow = _alert(
        "MySQLSlowQueries",
        "mysql-orders",
        "slow queries rising on mysql-orders",
        "rate(mysql_global_status_slow_queries[5m]) = 3.2/s",
        "2026-11-29T02:08:40Z",
    )
    pool = {
        **POOL,
        "summary": "order-service pool has waiting threads",
        "description": "hikaricp_connections_pending > 20 for 10m",
    }
    gateway = _alert(
        "PaymentGatewayTimeoutRateHigh",
        "payment-gateway",
        "payment-gateway ERR_TIMEOUT ratio above 5%",
        "ERR_TIMEOUT ratio 9.1% over 5m",
        "2026-11-29T02:14:30Z",
        severity="critical",
    )
    evidence = {
        "MySQLSlowQueries": [
            _lookup("kb-1", "database/mysql-slow-query.md"),
            _logs(
                "lg-1",
                "mysql-orders",
                ("2026-11-29T02:08:41Z", "WARN", "# Query_time: 12.4  Rows_examined: 8214411"),
                (
                    "2026-11-29T02:09:02Z",
                    "WARN",
                    "EXPLAIN orders: type=ALL key=NULL (index idx_user_status dropped by migration V42)",
                ),
            ),
        ],
        pool["alertname"]: [
            _lookup("kb-2", "infrastructure/mysql-connection-pool.md", level="REFERENCE"),
            _logs(
                "lg-2",
                "order-service",
                (
                    "2026-11-29T02:11:05Z",
                    "WARN",
                    "order-db-pool - Pool stats (total=20, active=20, idle=0, waiting=41)",
                ),
            ),
        ],
        "PaymentGatewayTimeoutRateHigh": [
            _lookup("kb-3", "api/payment-errors.md"),
            _logs(
                "lg-3",
                "payment-gateway",
                ("2026-11-29T02:14:02Z", "ERROR", gateway_log),
                ("2026-11-29T02:14:09Z", "INFO", "channel=alipay request_id=pg-2 status=SUCCEEDED"),
            ),
        ],
    }
    return [gateway, pool, slow], evidence


def test_a_causal_chain_is_drawn_when_the_evidence_links_the_alerts() -> None:
    alerts, evidence = _chain_inputs(
        "request_id=pg-81a2 ERR_TIMEOUT: internal callback POST order-service/internal/orders/pay-confirm timed out after 15000ms"
    )
    report = build_report(
        alerts, evidence, note="Checkout fails, find the root cause", read_runbook=READ
    )
    chain = _section(report, "## Causal chain")
    assert (
        "**MySQLSlowQueries** → **HikariPoolPendingThreadsHigh** → **PaymentGatewayTimeoutRateHigh**"
        in chain
    )
    gateway_plan = _section(report, "## Action plan 1")
    assert "Fix the upstream alert HikariPoolPendingThreadsHigh first" in gateway_plan
    assert "扩容网关实例" not in gateway_plan and "权重降为 0" not in gateway_plan
    assert "加索引" in _section(report, "## Action plan 3")


def test_a_gateway_failing_on_one_channel_is_not_chained_to_the_pool() -> None:
    alerts, evidence = _chain_inputs(
        "channel=unionpay request_id=pg-7f31 ERR_TIMEOUT upstream deadline 15000ms exceeded"
    )
    report = build_report(alerts, evidence, read_runbook=READ)
    chain = _section(report, "## Causal chain")  # the slow query still explains the pool
    assert "**MySQLSlowQueries** → **HikariPoolPendingThreadsHigh**" in chain
    assert "PaymentGatewayTimeoutRateHigh" not in chain
    analysis = _section(report, "## Root-cause analysis 1")
    assert "errors only on channel=unionpay; channel=alipay succeeds" in analysis
    assert "ruled out by the evidence" in analysis  # "all channels at once" is not what happened
    assert "权重降为 0" in _section(report, "## Action plan 1")


def test_the_report_speaks_the_alerts_language() -> None:
    english = _alert(
        "KafkaConsumerLag",
        "order-sync",
        "consumer group lag above 100000",
        "lag 3120450, growing for 40 minutes",
        "2026-12-01T04:20:00Z",
    )
    report = build_report([english], {"KafkaConsumerLag": []})
    assert report.startswith("# Alert analysis report") and "告警" not in report.split("```")[0]
    assert build_report([REDIS], {}).startswith("# 告警分析报告")
    assert report_language([english], note="分析一下当前告警") == "zh"  # the operator's note wins
    assert report_language([]) == "zh"


def test_a_threshold_in_the_runbook_is_checked_against_the_value_seen() -> None:
    items = parse(
        "## 判断\n\n| 现象 | 说明 |\n|---|---|\n| `ratio` > 1.5 | 碎片严重 |\n| `ratio` < 1 | swap |\n"
    )
    ledger = Ledger()
    ref = ledger.add("log", "ratio=1.2")
    facts = gather("X", "", ref, [({"message": "ratio=1.2", "level": "INFO"}, ref)])
    high, low = (judge(i, [facts], "en") for i in items)
    assert high.ruled_out == "the evidence shows ratio=1.2, not ratio > 1.5"
    assert low.ruled_out == "the evidence shows ratio=1.2, not ratio < 1"


def test_a_table_row_keeps_its_action_column() -> None:
    items = parse(
        "## 频繁 rebalance\n\n| 原因 | 说明 | 处理 |\n|---|---|---|\n| 单批处理超时 | 被踢出组 | 减小 `max.poll.records` |\n"
    )
    assert [(i.kind, i.text, i.action) for i in items] == [
        ("row", "单批处理超时 | 被踢出组", "减小 `max.poll.records`")
    ]


def _step_round(level: str) -> list[Any]:
    from langchain_core.messages import AIMessage, ToolMessage

    calls = [
        {"name": "lookup_knowledge", "args": {}, "id": "a"},
        {"name": "query_logs", "args": {}, "id": "b"},
    ]
    return [
        AIMessage(content="", tool_calls=calls),
        ToolMessage(
            "{}", tool_call_id="a", name="lookup_knowledge", artifact={"relevance_level": level}
        ),
        ToolMessage("{}", tool_call_id="b", name="query_logs"),
    ]


def test_an_alert_step_settles_on_any_runbook_found() -> None:
    tools = ["lookup_knowledge", "query_logs"]
    assert step_settled(tools, _step_round("REFERENCE"), alert_step=True)
    assert not step_settled(tools, _step_round("REFERENCE"))  # a chat step may narrow its query
    assert not step_settled(tools, _step_round("NONE"), alert_step=True)  # nothing: retry


def test_an_alert_labelled_with_one_channel_is_not_chained_to_the_pool() -> None:
    alerts, evidence = _chain_inputs(
        "channel=unionpay request_id=pg-7f31 ERR_TIMEOUT upstream deadline 15000ms exceeded"
    )
    alerts[0]["labels"]["channel"] = "unionpay"
    gateway = evidence["PaymentGatewayTimeoutRateHigh"]
    gateway[1].data["lines"] = gateway[1].data["lines"][:1]  # the error alone: nothing to compare
    report = build_report(alerts, evidence, read_runbook=READ)
    assert "PaymentGatewayTimeoutRateHigh" not in _section(report, "## Causal chain")
    analysis = _section(report, "## Root-cause analysis 1")
    assert "the alert and its errors are on channel=unionpay only" in analysis
