"""The executor as a subgraph (issue 21): each plan step runs in its own message channel and comes
back as a ``StepReport``; a stream with subgraphs shows a step live; a run the earlier loop left in
the middle of a step says so instead of finishing with nothing."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command

from graph.context import Context
from graph.executor import MID_STEP, StoppedMidStep
from graph.state import run_input
from runs.events import translate

THREE = (
    "订单服务最近连接池等待线程很高，支付网关又报 ERR_TIMEOUT，Redis 内存也快满了，"
    "请综合分析可能的根因并给出排查步骤和处理建议"
)
TWO = "支付网关 ERR_TIMEOUT 突增，同时订单服务 HikariCP 连接池超时，分别怎么排查？"
# Nothing in the runbooks covers these: the executor model is asked again within the step.
UNCOVERED = "Kubernetes 节点 NotReady 怎么排查，同时 Kafka 消费堆积怎么处理？"


def _config() -> dict:
    return {"configurable": {"thread_id": uuid.uuid4().hex}}


async def test_each_step_reports_exactly_its_own_tool_calls(services) -> None:  # noqa: ANN001
    out = await services.graphs.chat.ainvoke(
        run_input(THREE), _config(), context=Context(lookup_budget=2)
    )
    calls = [tc["id"] for m in out["scratch"] if isinstance(m, AIMessage) for tc in m.tool_calls]
    reports = out["executor_feedback"]
    assert len(reports) == 3
    # In order and without overlap: the answer groups the evidence by the step that found it.
    assert [c for r in reports for c in r["call_ids"]] == calls
    assert all(r["status"] in ("reported", "settled") and r["report"] for r in reports)
    lookups = [m for m in out["scratch"] if isinstance(m, ToolMessage)]
    assert len(lookups) == 3
    # The run's lookup count is the lookups served, however many steps shared the memory: the
    # third is refused by the budget of two, and says so.
    assert out["lookup_count"] == 2 and "上限" in lookups[-1].content


async def test_a_step_out_of_executor_steps_ends_the_run_with_what_it_found(services) -> None:  # noqa: ANN001
    out = await services.graphs.chat.ainvoke(
        run_input(UNCOVERED), _config(), context=Context(max_executor_steps=2)
    )
    (report,) = out["executor_feedback"]
    assert report["status"] == "max_executor_steps" and "执行步数已达上限" in report["report"]
    assert out["stop_reason"] == "max_executor_steps"
    assert "max_executor_steps" in out["answer"]
    # the two model calls the step was allowed, each with its tool round
    assert sum(1 for m in out["scratch"] if isinstance(m, AIMessage) and m.tool_calls) == 2


async def _events(graph, question: str, subgraphs: bool) -> list[dict]:  # noqa: ANN001
    modes = ["tasks", "updates", "messages"]
    events: list[dict] = []
    stream = graph.astream(
        run_input(question), _config(), context=Context(), stream_mode=modes, subgraphs=subgraphs
    )
    async for chunk in stream:
        ns, mode, data = chunk if subgraphs else ((), *chunk)
        events += translate(mode, data, ns if subgraphs else None)
    return events


async def test_a_stream_with_subgraphs_traces_each_step_as_it_runs(services) -> None:  # noqa: ANN001
    live = await _events(services.graphs.chat, UNCOVERED, subgraphs=True)
    nodes = [e["node"] for e in live if e["type"] == "node"]
    # the step's model calls, its tools and its report, not one opaque "executor" node
    assert nodes.count("executor") == 3 and nodes.count("executor_tools") == 2
    assert nodes.count("executor_done") == 1
    kinds = [e["type"] if e["type"] != "node" else e["node"] for e in live]
    first_result = kinds.index("tool_result")
    assert first_result < kinds.index("executor_tools", first_result) < kinds.index("executor_done")
    # Each call and result once, the same ones a stream without subgraphs gives at the step's end.
    flat = await _events(services.graphs.chat, UNCOVERED, subgraphs=False)
    tool_events = lambda evs: sorted(  # noqa: E731
        (e["type"], e["call_id"]) for e in evs if e["type"] in ("tool_call", "tool_result")
    )
    assert tool_events(live) == tool_events(flat)
    assert len(set(tool_events(live))) == len(tool_events(live)) == 4  # two lookups
    assert [e["text"] for e in live if e["type"] == "answer"] == [
        e["text"] for e in flat if e["type"] == "answer"
    ]


async def test_a_run_stopped_mid_step_by_the_earlier_loop_fails_clearly(services) -> None:  # noqa: ANN001
    graph, config = services.graphs.chat, _config()
    out = await graph.ainvoke(run_input(TWO), config, context=Context())
    # The earlier loop ran a step's tools and report as nodes of this graph: a checkpoint of it
    # may wait on one of them.
    for node in ("executor_tools", "executor_done"):
        with pytest.raises(StoppedMidStep, match="ask the question again"):
            await graph.ainvoke(Command(goto=node), config, context=Context())
    # Or on the executor between two model calls of a step, its tool results not yet reported.
    call = {
        "name": "lookup_knowledge",
        "args": {"query": "x"},
        "id": "old-call",
        "type": "tool_call",
    }
    plan = {**out["plan"], "executed": False, "final": True}
    await graph.aupdate_state(
        config,
        {
            "plan": plan,
            "scratch": [
                AIMessage(content="", tool_calls=[call]),
                ToolMessage(content="{}", tool_call_id="old-call", name="lookup_knowledge"),
            ],
        },
        as_node="planner",
    )
    with pytest.raises(StoppedMidStep) as stopped:
        await graph.ainvoke(None, config, context=Context())
    assert str(stopped.value) == MID_STEP
