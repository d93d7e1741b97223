"""Model cost per answer (issue 14): the rules supervisor, the compact executor context, one lookup
per symptom, and how a long run's prompts stay bounded."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections import Counter

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from graph.compact import FINDINGS_HEADER, MAX_FINDINGS, compact, task_only
from graph.context import Context
from graph.graphs import compile_graphs
from graph.nodes import Plan, Step, plan_steps
from graph.rules import next_agent, step_settled
from graph.state import run_input
from tests.support.scripted_model import VARIANTS, ScriptedFactory, ScriptedModel
from tests.support.spies import ModelInputs

THREE_SYMPTOMS = (
    "订单服务最近连接池等待线程很高，支付网关又报 ERR_TIMEOUT，Redis 内存也快满了，"
    "请综合分析可能的根因并给出排查步骤和处理建议"
)
TWO_DOMAINS = "支付网关 ERR_TIMEOUT 突增，同时订单服务 HikariCP 连接池超时，分别怎么排查？"


async def run(graph, question: str, flow: str = "CHAT", context=None, callbacks=None):  # noqa: ANN001
    config = {"configurable": {"thread_id": uuid.uuid4().hex}, "callbacks": callbacks or []}
    return await graph.ainvoke(run_input(question, flow), config, context=context or Context())


def lookups(out) -> list[dict]:  # noqa: ANN001
    return [
        json.loads(m.content)
        for m in out["scratch"]
        if isinstance(m, ToolMessage) and m.name == "lookup_knowledge"
    ]


def _queries(m: AIMessage) -> list[str]:
    return [tc["args"]["query"] for tc in m.tool_calls if tc["name"] == "lookup_knowledge"]


# --- the rules supervisor (pure) -----------------------------------------------------------------


def test_rules_supervisor_routes_from_the_plan_state() -> None:
    batch = plan_steps(Plan(steps=[Step(instruction="a"), Step(instruction="b")], finish=True))
    first, second = batch
    assert [s["instruction"] for s in batch] == ["a", "b"]
    assert not first["final"] and second["final"]  # the planner is not asked again after "b"
    assert next_agent(None)[0] == "planner"
    assert next_agent(first)[0] == "executor"
    assert next_agent({**first, "executed": True})[0] == "planner"
    assert next_agent({**second, "executed": True})[0] == "finish"
    (done,) = plan_steps(Plan(finish=True))
    assert next_agent(done)[0] == "finish"
    open_ended = plan_steps(Plan(steps=[Step(instruction="a")], finish=False))[0]
    assert next_agent({**open_ended, "executed": True})[0] == "planner"


def test_a_supervisor_other_than_rules_or_model_is_refused() -> None:
    with pytest.raises(ValueError, match="supervisor"):
        Context(supervisor="llm")  # type: ignore[arg-type]


async def test_rules_supervisor_spends_no_model_call_and_model_supervisor_still_works(
    services,  # noqa: ANN001
) -> None:
    by_rules, by_model = ModelInputs(), ModelInputs()
    ruled = await run(services.graphs.chat, TWO_DOMAINS, callbacks=[by_rules.handler])
    modelled = await run(
        services.graphs.chat,
        TWO_DOMAINS,
        context=Context(supervisor="model"),
        callbacks=[by_model.handler],
    )
    assert "supervisor" not in [n for n, _ in by_rules.calls]
    assert [n for n, _ in by_model.calls].count("supervisor") >= 3
    for out in (ruled, modelled):  # same route, same plan, same evidence either way
        assert out["plan"] is not None and set(out["retrieved"]) == {"api", "infrastructure"}
        assert len(out["executor_feedback"]) == 2
    assert ruled["answer"] == modelled["answer"]


def _round(*results: ToolMessage) -> list:
    calls = [{"name": r.name, "args": {}, "id": r.tool_call_id} for r in results]
    return [AIMessage(content="", tool_calls=calls), *results]


def _lookup(level: str | None, dedup: str | None = None, status: str = "success") -> ToolMessage:
    art = {"relevance_level": level, "dedup_reason": dedup}
    return ToolMessage(
        "{}", tool_call_id=uuid.uuid4().hex, name="lookup_knowledge", artifact=art, status=status
    )


def test_a_step_settles_when_its_tools_say_stop() -> None:
    logs = ToolMessage("[]", tool_call_id="l", name="query_logs")
    assert step_settled([], _round(_lookup("PRECISE")))
    assert step_settled([], _round(_lookup("HIGHLY_RELEVANT")))
    assert step_settled([], _round(_lookup(None, "doc_retrieved")))
    assert step_settled(["lookup_knowledge", "query_logs"], _round(_lookup("PRECISE"), logs))
    # The model is asked again when the evidence leaves it something to decide.
    assert not step_settled([], _round(_lookup("REFERENCE")))
    assert not step_settled([], _round(_lookup(None)))  # found nothing: it may narrow the query
    assert not step_settled([], _round(_lookup("PRECISE", status="error")))
    assert not step_settled(["lookup_knowledge", "query_logs"], _round(_lookup("PRECISE")))
    assert not step_settled([], [AIMessage(content="report")])


# --- every symptom looked up ----------------------------------------------------------------------


async def test_three_symptom_chat_looks_each_symptom_up_once(services) -> None:  # noqa: ANN001
    inputs = ModelInputs()
    out = await run(services.graphs.chat, THREE_SYMPTOMS, callbacks=[inputs.handler])
    results = lookups(out)
    served = Counter(  # FS-3 still applies: a runbook a lookup already served is not sent again
        src
        for p in results
        for src in [
            p["primary"]["source"] if p["primary"] else "",
            *(s["source"] for s in p["supplement"]),
        ]
        if src and "," not in src
    )
    queries = [q for m in out["scratch"] if isinstance(m, AIMessage) for q in _queries(m)]
    assert len(results) == len(set(queries)) >= 3 and max(served.values()) == 1
    for doc in (
        "infrastructure/mysql-connection-pool.md",
        "api/payment-errors.md",
        "infrastructure/redis-config.md",
    ):
        assert doc in served and doc in out["answer"]
    assert len(inputs.for_node("planner")) == 1  # all the steps in one plan
    # Each lookup said stop (PRECISE / HIGHLY_RELEVANT / already served): one executor call a step.
    assert len(inputs.for_node("executor")) == len(out["executor_feedback"]) == len(results)
    assert all(f["report"] for f in out["executor_feedback"])
    assert out["retrieved"]["infrastructure"][:2] == [
        "infrastructure/mysql-connection-pool.md",
        "infrastructure/redis-config.md",
    ]


async def test_aiops_run_plans_every_alert_in_one_planner_call(services) -> None:  # noqa: ANN001
    inputs = ModelInputs()
    out = await run(services.graphs.aiops, "", flow="AI_OPS", callbacks=[inputs.handler])
    nodes = Counter(n for n, _ in inputs.calls)
    alerts = [f["alert"] for f in out["executor_feedback"] if f["alert"]]
    assert len(alerts) >= 2 and len(set(alerts)) == len(alerts)
    assert nodes["planner"] == 1 and "supervisor" not in nodes  # listing alerts needs no model
    assert sum(nodes.values()) <= 12
    for name in alerts:
        assert name in out["answer"]
    assert out["answer"].count("告警根因分析") == len(alerts)


# --- the compact executor context ----------------------------------------------------------------


def test_compact_context_keeps_the_latest_round_whole_and_earlier_ones_as_findings() -> None:
    rounds = []
    for i in range(MAX_FINDINGS + 4):
        call = {"name": "lookup_knowledge", "args": {"query": f"q{i}"}, "id": f"c{i}"}
        primary = {"source": f"d{i}.md", "content": "连接池" * 700}
        body = {"found": True, "relevanceLevel": "REFERENCE", "primary": primary}
        rounds += [
            AIMessage(content="", tool_calls=[call]),
            ToolMessage(json.dumps(body, ensure_ascii=False), tool_call_id=f"c{i}"),
        ]
    msgs = compact("SYSTEM", "TASK", rounds)
    system, task, latest_call, latest_result = msgs
    assert system.content == "SYSTEM" and isinstance(task, HumanMessage)
    assert task.content.startswith("TASK\n\n" + FINDINGS_HEADER)  # the stable prefix first
    assert "（更早的 3 条结果从略）" in task.content and "d2.md" not in task.content
    assert '- lookup_knowledge {"query":"q12"} → REFERENCE；d12.md' in task.content
    assert latest_call is rounds[-2] and latest_result is rounds[-1]
    assert len(task.content) < 2500  # ten short lines, not ten results in full


async def test_long_run_prompts_stay_bounded(services) -> None:  # noqa: ANN001
    """ISS-002's model: twenty lookups in one ReAct loop. Each call's prompt is bounded (the
    findings are capped lines), so the run costs linearly in its calls, not quadratically."""
    model = ScriptedModel(queries=VARIANTS, sent_tokens=[])
    graphs = compile_graphs(
        dataclasses.replace(services.deps, models=ScriptedFactory(model)), services.checkpointer
    )
    out = await run(graphs.chat, "连接池问题排查", context=Context(max_executor_steps=25))
    assert len(lookups(out)) == 20 and out["answer"]
    sizes = model.sent_tokens
    assert len(sizes) == 21
    # The 21st call carries twenty earlier results, yet is smaller than twice the 2nd call (one
    # runbook in full); resending the scratchpad made it many times bigger.
    assert sizes[-1] < 2 * sizes[1]
    capped = sizes[MAX_FINDINGS + 2 :]  # from here the findings block holds its maximum of lines
    assert max(capped) < 1.2 * min(capped)  # flat: a longer run adds calls, not bigger calls
    assert sum(sizes) < 25_000  # the whole scratchpad resent every call spent 53k (issue 14)


async def test_executor_prompt_prefix_is_stable_within_a_step(services) -> None:  # noqa: ANN001
    """Every executor call of one step starts with the same system prompt and task message, so a
    provider's prompt cache keeps hitting; only the findings and the latest round follow."""
    inputs = ModelInputs()
    # Nothing in the runbooks covers these: the lookup finds nothing, so the executor model is
    # asked again (a narrower query, then its report) within the same step.
    await run(
        services.graphs.chat,
        "Kubernetes 节点 NotReady 怎么排查，同时 Kafka 消费堆积怎么处理？",
        callbacks=[inputs.handler],
    )
    steps: dict[str, list[list]] = {}
    for msgs in inputs.for_node("executor"):
        steps.setdefault(task_only(msgs[1].content), []).append(msgs)
    assert any(len(calls) >= 3 for calls in steps.values())
    for task, calls in steps.items():
        first = calls[0]
        for later in calls[1:]:
            assert later[0].content == first[0].content
            assert later[1].content.startswith(task) and first[1].content == task
            assert len(later) <= 2 + 1 + 4  # system, task, the latest call and its results
