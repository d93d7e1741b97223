"""Evidence signals: what a log line or an alert value says, in the words runbooks use. Pure data.

A log line reads ``Apparent connection leak detected``; the runbook says ``连接泄漏``. Each signal
is a pattern on the evidence and the terms (both languages) a runbook uses for the same thing, so
an observation can be tied to the runbook item that names it. Signals describe what was observed,
never a conclusion about a particular incident.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Signal:
    name: str  # what was observed, as the report says it (English / Chinese)
    zh: str
    pattern: re.Pattern[str]
    terms: tuple[str, ...]  # how runbooks name it


def _s(name: str, zh: str, pattern: str, *terms: str) -> Signal:
    return Signal(name, zh, re.compile(pattern, re.I), terms)


SIGNALS: tuple[Signal, ...] = (
    _s(
        "slow query",
        "慢查询",
        r"slow query|query_time:\s*\d|slow_queries|慢查询|慢 ?sql",
        "慢查询",
        "慢 SQL",
        "慢SQL",
        "slow query",
        "SQL 执行慢",
    ),
    _s(
        "full table scan",
        "全表扫描",
        r"type=ALL|key=NULL|rows_examined:\s*\d{6,}|全表扫描",
        "全表扫描",
        "full table scan",
        "执行计划",
        "索引",
    ),
    _s(
        "index removed",
        "索引被删除",
        r"index \S+ (dropped|removed|missing)|索引.*(删除|丢失)",
        "索引",
        "加索引",
        "index",
    ),
    _s(
        "schema/code change",
        "变更或发布",
        r"\bmigration\b|\bdeploy(ed|ment)?\b|\brelease\b|发布|变更",
        "新发布",
        "发布",
        "变更",
        "回滚",
        "migration",
        "release",
        "deploy",
    ),
    _s(
        "connection pool exhausted",
        "连接池耗尽",
        r"active=(\d+), idle=0|connection is not available|pool.*exhaust|连接池耗尽",
        "连接池耗尽",
        "pool exhaust",
        "连接池超时",
    ),
    _s(
        "connection leak",
        "连接泄漏",
        r"connection leak|leak detect|连接泄漏",
        "连接泄漏",
        "connection leak",
        "泄漏",
    ),
    _s(
        "internal dependency timeout",
        "内部依赖超时",
        r"internal (callback|call|dependency|service)|内部(调用|依赖|回调)",
        "内部依赖",
        "internal dependency",
    ),
    _s("big key", "大 Key", r"big ?key|大 ?key", "大 Key", "大Key", "big key"),
    _s("no eviction policy", "不淘汰策略", r"noeviction", "noeviction", "淘汰策略"),
    _s("out of memory on write", "写入 OOM", r"OOM command not allowed", "OOM command not allowed"),
    _s("consumer group rebalancing", "消费组 rebalance", r"rebalanc", "rebalance"),
    _s(
        "slow batch processing",
        "单批处理过慢",
        r"batch of \d+ records in \d+\s*s",
        "单批处理时间",
        "单批处理",
        "processing time",
    ),
    _s(
        "large transaction",
        "大事务",
        r"in one transaction|affected \d{5,} rows|大事务|一个事务",
        "大事务",
        "big transaction",
        "large transaction",
    ),
    _s(
        "batch/cleanup job",
        "批量/清理任务",
        r"cleanup|archiv|batch job|清理任务|归档",
        "批量任务",
        "数据清理",
        "归档",
        "batch job",
        "cleanup",
    ),
    _s(
        "reads routed to the replica",
        "读流量仍在从库",
        r"read traffic|reads? (are )?(still )?routed",
        "读流量",
        "read traffic",
    ),
    _s(
        "huge container log",
        "容器日志过大",
        r"/var/log/pods/\S+\.log size|container log",
        "container log",
        "容器日志",
        "log file",
        "日志文件",
    ),
    _s(
        "debug logging",
        "DEBUG 日志级别",
        r"log level DEBUG|level=debug",
        "DEBUG",
        "log level",
        "日志级别",
    ),
    _s(
        "ACME rate limit",
        "签发被限流",
        r"ratelimited|rate limit|too many certificates",
        "rate limit",
        "限流",
        "too many certificates",
    ),
)

# Scope words: a runbook item that says "every channel" is contradicted by errors on one only.
GLOBAL_SCOPE = re.compile(r"所有|全部|全局|all (channels|instances)|every ", re.I)
SINGLE_SCOPE_TERMS = ("单渠道", "一个渠道", "只有一个", "个别实例", "single channel", "one channel")
