"""The incident eval suite's deterministic checks, pure: a right answer passes every check, and each
kind of wrong answer fails exactly the check that describes it (a scorer that passes a wrong answer
or fails a right one is a defect)."""

from __future__ import annotations

import json

import pytest

from evals.checks import Observation, run_checks
from evals.loader import SHIPPED_SCENARIOS, load_file
from evals.words import Synonyms, claims, names, normalize, says_not_found, shipped_synonyms
from graph.evidence import Evidence

SCENARIO = load_file(SHIPPED_SCENARIOS / "zh-aiops-pool-slow-query.yaml")
TITLES = {
    "infrastructure/mysql-connection-pool.md": "MySQL 连接池配置与连接池超时排查 (HikariCP Connection Pool)",
    "database/mysql-slow-query.md": "MySQL 慢查询定位与优化 (MySQL Slow Query)",
    "cache/redis-config.md": "Redis 配置与常见故障处理 (Redis Configuration)",
}
SLOW = (
    "at com.superbiz.order.OrderRepository.findPendingByUser(OrderRepository.java:88) slow query "
    "12.4s: SELECT * FROM orders WHERE user_id=? AND status='PENDING'"
)
RIGHT = f"""# 告警分析
告警 HikariPoolPendingThreadsHigh（order-service）：连接池被占满。
证据：`2026-11-29T02:09:32Z` {SLOW}
根因：这条慢查询扫描全表，长时间占住连接，导致连接池耗尽（依据 infrastructure/mysql-connection-pool.md 第三步）。
处置：对 orders(user_id, status) 加联合索引并用 EXPLAIN 验证；先 KILL 失控的查询止血。
来源：infrastructure/mysql-connection-pool.md、database/mysql-slow-query.md"""


def _lookup(*sources: str) -> Evidence:
    data = {
        "found": True,
        "primary": {"source": sources[0], "content": "…"},
        "supplement": [{"source": s, "content": "…"} for s in sources[1:]],
    }
    return Evidence("lookup_knowledge", {"query": "q"}, "c1", True, json.dumps(data), data)


def _world_tools() -> list[Evidence]:
    alerts = {"alerts": [{"alertname": a.labels["alertname"]} for a in SCENARIO.world.alerts]}
    lines = {"service": "order-service", "lines": [x.model_dump() for x in SCENARIO.world.logs]}
    return [
        Evidence("query_prometheus_alerts", {}, "c0", True, json.dumps(alerts), alerts),
        Evidence("query_logs", {"service": "order-service"}, "c2", True, json.dumps(lines), lines),
    ]


def _observe(answer: str, *, tools: list[Evidence] | None = None, **kw: object) -> Observation:
    evidence = _world_tools() + [
        _lookup("infrastructure/mysql-connection-pool.md", "database/mysql-slow-query.md")
    ]
    base: dict[str, object] = {
        "answers": [answer],
        "statuses": ["SUCCESS"],
        "errors": [None],
        "questions": ["分析当前活跃告警"],
        "evidence": evidence if tools is None else tools,
        "model_calls": 5,
        "tokens": 4000,
    }
    return Observation(**(base | kw))  # type: ignore[arg-type]


def _failed(obs: Observation) -> dict[str, str]:
    results = run_checks(SCENARIO, obs, titles=TITLES, synonyms=shipped_synonyms())
    return {c.name: c.reason for c in results if not c.passed}


def test_a_right_answer_passes_every_check() -> None:
    assert _failed(_observe(RIGHT)) == {}


def test_citing_the_wrong_runbook_fails_runbook_cited_only() -> None:
    wrong = RIGHT.replace("infrastructure/mysql-connection-pool.md", "cache/redis-config.md")
    wrong = wrong.replace("database/mysql-slow-query.md", "cache/redis-config.md")
    failed = _failed(_observe(wrong))
    assert set(failed) == {"runbook_cited"}
    assert "cites none of infrastructure/mysql-connection-pool.md" in failed["runbook_cited"]
    assert "cited: cache/redis-config.md" in failed["runbook_cited"]


def test_a_citation_no_lookup_returned_is_ungrounded() -> None:
    failed = _failed(_observe(RIGHT, tools=_world_tools() + [_lookup("cache/redis-config.md")]))
    assert set(failed) == {"runbook_cited"} and "ungrounded" in failed["runbook_cited"]


def test_a_cited_path_outside_the_knowledge_base_fails() -> None:
    failed = _failed(_observe(RIGHT + "\n另见 runbooks/hikari-tuning.md"))
    assert (
        set(failed) == {"citations_exist"}
        and "runbooks/hikari-tuning.md" in failed["citations_exist"]
    )


def test_the_forbidden_fix_fails_no_forbidden_claim_and_a_negated_one_does_not() -> None:
    wrong = RIGHT.replace("先 KILL 失控的查询止血。", "建议调大 maximumPoolSize 到 50。")
    failed = _failed(_observe(wrong))
    assert (
        set(failed) == {"no_forbidden_claim"}
        and "调大 maximumPoolSize" in failed["no_forbidden_claim"]
    )
    negated = RIGHT.replace(
        "先 KILL 失控的查询止血。", "先 KILL 失控的查询止血，不要调大 maximumPoolSize。"
    )
    assert _failed(_observe(negated)) == {}


def test_missing_evidence_fails_evidence_used_and_says_which() -> None:
    without = RIGHT.replace(f"证据：`2026-11-29T02:09:32Z` {SLOW}\n", "")
    failed = _failed(_observe(without))
    assert set(failed) == {"evidence_used"}
    assert (
        "slow query 12.4s" in failed["evidence_used"]
        and "not used in the answer" in failed["evidence_used"]
    )
    # A log line no tool returned is evidence never gathered, and the reason says so.
    failed = _failed(_observe(RIGHT, tools=_world_tools()[:1] + [_lookup(*TITLES)]))
    assert "never returned" in failed["evidence_used"] and "no service" in failed["evidence_used"]


def test_quoting_the_log_is_not_naming_the_cause() -> None:
    # The log line says "slow query"; an answer that only quotes it has not diagnosed anything.
    echo = RIGHT.replace("根因：这条慢查询扫描全表，长时间占住连接，导致连接池耗尽", "根因：待确认")
    failed = _failed(_observe(echo))
    assert set(failed) == {"cause_named"} and "慢查询" in failed["cause_named"]


def test_missing_steps_fail_answer_names() -> None:
    vague = RIGHT.replace(
        "处置：对 orders(user_id, status) 加联合索引并用 EXPLAIN 验证；先 KILL 失控的查询止血。",
        "处置：请联系 DBA。",
    )
    failed = _failed(_observe(vague))
    assert set(failed) == {"answer_names"} and "索引" in failed["answer_names"]


def test_cost_over_the_ceiling_and_a_failed_run_fail() -> None:
    failed = _failed(_observe(RIGHT, model_calls=9, tokens=6001))
    assert failed == {"cost": "over the ceiling: 9 model calls > 8, 6001 tokens > 6000"}
    broken = _failed(_observe("", statuses=["FAILED"], errors=["the model endpoint failed"]))
    assert "the model endpoint failed" in broken["completed"]


def test_a_no_runbook_scenario_wants_the_answer_to_say_so() -> None:
    s = load_file(SHIPPED_SCENARIOS / "en-chat-mongodb-election.yaml")
    titles = {"messaging/kafka-under-replicated-partitions.md": "Kafka Under-Replicated Partitions"}
    honest = Observation(answers=["The knowledge base has no runbook for MongoDB; nothing found."])
    honest.statuses, honest.errors = ["SUCCESS"], [None]
    assert all(c.passed for c in run_checks(s, honest, titles=titles, synonyms=shipped_synonyms()))
    confident = Observation(
        answers=["根据知识库检索结果：**messaging/kafka-under-replicated-partitions.md** …"],
        statuses=["SUCCESS"],
        errors=[None],
        evidence=[_lookup("messaging/kafka-under-replicated-partitions.md")],
    )
    failed = {
        c.name: c.reason
        for c in run_checks(s, confident, titles=titles, synonyms=shipped_synonyms())
        if not c.passed
    }
    assert set(failed) == {"says_no_runbook", "wrong_runbook"}


def test_words_match_by_meaning_not_layout() -> None:
    syn = shipped_synonyms()
    assert normalize("**慢 SQL**  和 `KILL`") == "慢sql和kill"
    assert names("发现一条 Slow Query", "慢查询", syn)  # a synonym in the other language
    assert names("用 UNLINK 删除", "UNLINK", syn) and not names(
        "leakDetectionThreshold", "leak", syn
    )
    assert names("ＯＯＭＫｉｌｌｅｄ", "OOMKilled", syn)  # full-width letters
    assert not claims("不要用 KEYS * 扫描", "KEYS *") and claims("可以用 KEYS * 扫描", "KEYS *")
    assert not claims("Do not enable unclean leader election.", "enable unclean leader election")
    assert says_not_found("知识库中未找到与「x」足够相关的文档") and not says_not_found("找到了")
    custom = Synonyms.from_lists([["甲", "alpha"]])
    assert custom.expand(["ALPHA"]) == ["alpha", "甲"]


@pytest.mark.parametrize("path", sorted(SHIPPED_SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_an_empty_answer_fails_every_shipped_scenario(path) -> None:  # noqa: ANN001
    # No scenario is passed by saying nothing: every one expects something an answer must say.
    s = load_file(path)
    obs = Observation(
        answers=["嗯。"], statuses=["SUCCESS"], errors=[None], model_calls=1, tokens=10
    )
    results = run_checks(s, obs, titles=TITLES, synonyms=shipped_synonyms())
    assert not all(c.passed for c in results), s.id
