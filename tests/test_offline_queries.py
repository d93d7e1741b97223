"""The offline model's first lookup asks the question as the operator wrote it (a hosted model
passes a question through nearly verbatim): reducing it to two-character keywords dropped the words
that carry a Chinese symptom ("慢", "卡", "满"), and "接口…怎么查到底是哪条 SQL 慢" found no runbook
while the question itself finds mysql-slow-query.md (eval ``zh-chat-slow-query-diagnose``)."""

from __future__ import annotations

from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

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
