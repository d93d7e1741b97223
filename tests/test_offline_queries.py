"""The offline model's tool calls. Its first lookup asks the question as the operator wrote it (a hosted model
passes a question through nearly verbatim): reducing it to two-character keywords dropped the words
that carry a Chinese symptom ("慢", "卡", "满"), and "接口…怎么查到底是哪条 SQL 慢" found no runbook
while the question itself finds mysql-slow-query.md (eval ``zh-chat-slow-query-diagnose``)."""

from __future__ import annotations

import json

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool

from graph.nodes import Plan
from llm.offline import OfflineChatModel
from tools.knowledge import DESCRIPTION


@tool("lookup_knowledge", description=DESCRIPTION)
def lookup_knowledge(query: str) -> str:
    """Only its name and schema matter here: the test reads the call the model makes."""
    raise AssertionError("not run")


def first_lookup(question: str) -> str:
    model = OfflineChatModel(role="assistant").bind_tools([lookup_knowledge])
    reply = model.invoke([HumanMessage(question)])
    calls = [c for c in reply.tool_calls if c["name"] == "lookup_knowledge"]
    assert calls, reply
    return calls[0]["args"]["query"]


def test_a_chinese_question_keeps_its_one_character_symptom_words() -> None:
    q = "接口 P99 飙到 3 秒，链路追踪全卡在 OrderMapper 那一层，怎么查到底是哪条 SQL 慢"
    query = first_lookup(q)
    assert "慢" in query and "卡" in query, query


def test_a_pasted_log_is_still_reduced_to_its_terms() -> None:
    pasted = "ERROR HikariPool-1 - Connection is not available, request timed out " * 10
    query = first_lookup(pasted)
    assert len(query) < len(pasted) / 3 and "HikariPool-1" in query, query


def planned_steps(question: str) -> list[dict]:
    state = {"flow": "CHAT", "question": question, "feedback": [], "done_domains": []}
    task = "```json\n" + json.dumps(state, ensure_ascii=False) + "\n```"
    model = OfflineChatModel(role="planner").bind_tools([Plan])
    reply = model.invoke([SystemMessage("knowledge map: (empty)"), HumanMessage(task)])
    return reply.tool_calls[0]["args"]["steps"]


def test_a_question_asking_for_a_services_logs_plans_reading_them() -> None:
    """zh-chat-logs-pool-leak: the planned step carried only its lookup, so the logs the operator
    asked for were never read."""
    steps = planned_steps("帮我看下服务 order-service 的日志，连接池是不是又满了？为什么会满")
    assert steps and steps[0]["service"] == "order-service", steps
    assert "query_logs" in steps[0]["tools"]
    assert not any(s.get("service") for s in steps[1:])  # read once, not per symptom
    assert not planned_steps("连接池是不是又满了？为什么会满")[0].get("service")
