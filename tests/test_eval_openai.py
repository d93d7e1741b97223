"""The same suite against an OpenAI-compatible endpoint: a local OpenAI-protocol server whose final
answers are scripted drives ``ChatOpenAI`` through the real graphs. A scripted wrong answer (wrong
runbook, forbidden fix, missing evidence) fails exactly those checks; a scripted right answer
passes; the LLM judge's score is stored apart and never turns a check."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evals.loader import parse_scenario
from evals.suite import Suite, SuiteError, SuiteOptions
from persistence import eval_runs
from persistence.db import Database
from tests.support.kb import kb_settings
from tests.support.scripted_answers import ScriptedAnswerLLM

pytestmark = pytest.mark.slow  # builds eval knowledge bases and runs the suite (tens of seconds)


SCENARIO = parse_scenario(
    """
id: local-zh-pool-leak
title: 连接池被泄漏的连接占满（脚本化模型测试）
language: zh
flow: chat
intent: why
knowledge_base: local
question: "帮我看下服务 order-service 的日志，连接池满了是为什么"
world:
  now: "2026-12-01T09:30:00Z"
  logs:
    - {ts: "2026-12-01T09:06:40Z", service: order-service, level: WARN, message: "HikariPool-1 - Apparent connection leak detected, stack trace follows: OrderExportJob.run(OrderExportJob.java:57)"}
    - {ts: "2026-12-01T09:07:02Z", service: order-service, level: ERROR, message: "HikariPool-1 - Connection is not available, request timed out after 30000ms."}
expected:
  runbooks: [infrastructure/mysql-connection-pool.md]
  wrong_runbooks: [infrastructure/redis-config.md]
  cause:
    category: resource_leak
    names: [[连接泄漏, connection leak]]
  names: [[try-with-resources, 归还连接]]
  evidence:
    logs: ["Apparent connection leak detected"]
  forbidden: [调大 maximumPoolSize]
  cost: {model_calls: 10, tokens: 60000}
"""
)
RIGHT = """order-service 的连接池被泄漏的连接占满：日志显示
`HikariPool-1 - Apparent connection leak detected, stack trace follows: OrderExportJob.run(OrderExportJob.java:57)`，
OrderExportJob 借出连接后没有归还，这是连接泄漏。修复：用 try-with-resources 保证归还连接，
按 infrastructure/mysql-connection-pool.md 的「连接泄漏检测」打开 leakDetectionThreshold 定位。
来源：infrastructure/mysql-connection-pool.md"""
WRONG = """连接池满了，可能是连接泄漏，也可能只是流量太大：建议调大 maximumPoolSize 到 60，
并用 try-with-resources 归还连接。参考 infrastructure/redis-config.md 的连接池配置。"""


@pytest.fixture
def llm() -> Iterator[ScriptedAnswerLLM]:
    server = ScriptedAnswerLLM().start()
    yield server
    server.stop()


async def _run(tmp_path, embeddings, llm: ScriptedAnswerLLM, answer: str, score: float):  # noqa: ANN001, ANN202
    llm.answer, llm.judge_score = answer, score
    settings = kb_settings(
        tmp_path,
        llm_base_url=llm.base_url,
        llm_model="stub-model",
        llm_api_key="k",
        llm_max_retries=0,
    )
    options = SuiteOptions(model="stub-model", judge="stub-model", workdir=tmp_path / "evals")
    report = await Suite(settings, options, embeddings=embeddings).run([SCENARIO])
    [result] = report.results
    return settings, report, result


async def test_a_scripted_right_answer_passes(tmp_path, embeddings, llm) -> None:  # noqa: ANN001
    _, report, result = await _run(tmp_path, embeddings, llm, RIGHT, 0.9)
    assert result.passed, result.failed
    assert result.observation.answer == RIGHT
    # The run went over the wire: ChatOpenAI's requests carried the real tools and tool results.
    assert any(r["model"] == "stub-model" for r in llm.requests)
    tool_messages = [m for r in llm.requests for m in r["messages"] if m["role"] == "tool"]
    assert any("Apparent connection leak detected" in m["content"] for m in tool_messages)
    assert result.judge == {"model": "stub-model", "score": 0.9, "reason": "scripted"}
    assert report.meta["model"] == "stub-model" and report.summary()["judge_mean"] == 0.9


async def test_a_scripted_wrong_answer_fails_exactly_what_is_wrong(
    tmp_path, embeddings, llm
) -> None:  # noqa: ANN001
    settings, report, result = await _run(tmp_path, embeddings, llm, WRONG, 0.95)
    failed = {c.name: c.reason for c in result.failed}
    # Wrong runbook, forbidden fix, evidence not used; it does name a leak and the fix words, so
    # those checks pass: the scorer fails what is wrong and nothing else.
    assert set(failed) == {"runbook_cited", "wrong_runbook", "no_forbidden_claim", "evidence_used"}
    assert "infrastructure/redis-config.md" in failed["wrong_runbook"]
    assert "调大 maximumPoolSize" in failed["no_forbidden_claim"]
    assert "Apparent connection leak detected" in failed["evidence_used"]
    # A generous judge does not rescue it: its score is stored apart from the checks.
    assert result.judge["score"] == 0.95 and not result.passed
    db = Database(settings.database_url)
    try:
        async with db.session() as s:
            [row] = await eval_runs.run_results(s, report.meta["run_id"])
            run = await eval_runs.get_run(s, report.meta["run_id"])
    finally:
        await db.dispose()
    assert row.passed is False and row.judge["score"] == 0.95
    assert run.model == "stub-model" and run.judge_model == "stub-model" and run.pass_rate == 0


def test_a_hosted_model_needs_an_endpoint(tmp_path) -> None:  # noqa: ANN001
    with pytest.raises(SuiteError, match="LLM_BASE_URL"):
        Suite(kb_settings(tmp_path), SuiteOptions(model="gpt-x"))
    with pytest.raises(SuiteError, match="cannot judge"):
        Suite(
            kb_settings(tmp_path, llm_base_url="http://127.0.0.1:9/v1"),
            SuiteOptions(judge="offline"),
        )
