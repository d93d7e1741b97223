"""The same graphs through ``ChatOpenAI`` against a local OpenAI-protocol server (tests/support/openai_stub.py)."""

from __future__ import annotations

import dataclasses
import json
import uuid

import pytest
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI

from graph.context import Context
from graph.graphs import compile_graphs
from graph.state import run_input
from llm.factory import ModelFactory
from settings import load_settings
from tests.support.openai_stub import StubLLM
from tests.support.spies import ModelInputs


@pytest.fixture
def stub():
    server = StubLLM().start()
    yield server
    server.stop()


@pytest.fixture
def openai_services(services, stub, monkeypatch):  # noqa: ANN001
    settings = load_settings(
        llm_base_url=stub.base_url, llm_model="stub-model", llm_api_key="k", llm_max_retries=0
    )
    deps = dataclasses.replace(services.deps, models=ModelFactory(settings))
    monkeypatch.setattr(services, "graphs", compile_graphs(deps, services.checkpointer))
    return services


def test_factory_picks_the_endpoint_or_offline(stub) -> None:  # noqa: ANN001
    online = ModelFactory(load_settings(llm_base_url=stub.base_url, llm_model="m"))
    assert isinstance(online.for_role("executor"), ChatOpenAI)
    assert online.model_name(Context(model="offline")) == "offline"
    assert online.model_name(Context(model="other")) == "other"
    assert ModelFactory(load_settings()).model_name() == "offline"


async def test_simple_run_over_the_wire(openai_services, stub) -> None:  # noqa: ANN001
    out = await openai_services.graphs.chat.ainvoke(
        run_input("ERR_TIMEOUT 是什么意思"),
        {"configurable": {"thread_id": uuid.uuid4().hex}},
        context=Context(),
    )
    assert "api/payment-errors.md" in out["answer"]
    first, second = stub.requests[0], stub.requests[1]
    assert first["model"] == "stub-model"
    assert "lookup_knowledge" in {t["function"]["name"] for t in first["tools"]}
    tool_msg = next(m for m in second["messages"] if m["role"] == "tool")
    payload = json.loads(tool_msg["content"])
    assert payload["relevanceLevel"] == "PRECISE" and "l1_scores" not in tool_msg["content"]
    calls = [m for m in out["scratch"] if isinstance(m, AIMessage)]
    assert all(m.usage_metadata and m.usage_metadata["total_tokens"] > 0 for m in calls)
    assert calls[0].usage_metadata["input_tokens"] > 100  # the stub counted the real request body


async def test_complex_and_aiops_runs_over_the_wire(openai_services, stub) -> None:  # noqa: ANN001
    inputs = ModelInputs()
    q = "支付网关 ERR_TIMEOUT 突增，同时订单服务 HikariCP 连接池超时，分别怎么排查？"
    out = await openai_services.graphs.chat.ainvoke(
        run_input(q),
        {"configurable": {"thread_id": uuid.uuid4().hex}, "callbacks": [inputs.handler]},
        context=Context(supervisor="model"),  # the model supervisor, over the wire too
    )
    assert out["plan"] is not None and set(out["retrieved"]) == {"api", "infrastructure"}
    tool_names = [t["function"]["name"] for r in stub.requests for t in r.get("tools") or []]
    assert {"Route", "Plan", "lookup_knowledge"} <= set(tool_names)
    report = await openai_services.graphs.aiops.ainvoke(
        run_input("分析当前告警", "AI_OPS"),
        {"configurable": {"thread_id": uuid.uuid4().hex}},
        context=Context(),
    )
    assert "## 告警根因分析3" in report["answer"]


async def test_streaming_over_the_wire(openai_services, stub) -> None:  # noqa: ANN001
    settings = load_settings(llm_base_url=stub.base_url, llm_model="stub-model", llm_api_key="k")
    model = ModelFactory(settings).for_role("answer")
    chunks = [c async for c in model.astream("只回答：ok")]
    assert len(chunks) > 1
    assert (
        stub.requests[-1]["stream"] is True
        and stub.requests[-1]["stream_options"]["include_usage"] is True
    )
    full = chunks[0]
    for c in chunks[1:]:
        full = full + c
    assert full.usage_metadata and full.usage_metadata["total_tokens"] > 0


def _prompt_lines(name: str) -> list[str]:
    """Every rule line of a shipped prompt (the map slot and its fence aside)."""
    from settings import SHIPPED_PROMPTS_DIR

    text = (SHIPPED_PROMPTS_DIR / f"{name}.md").read_text(encoding="utf-8")
    return [
        line.strip()
        for line in text.splitlines()
        if line.strip() and "{knowledge_map}" not in line and not line.startswith("```")
    ]


async def test_a_hosted_model_gets_every_rule_a_bounded_map_and_distilled_findings(
    openai_services,  # noqa: ANN001
    stub,  # noqa: ANN001
) -> None:
    q = "订单服务 HikariCP 连接池等待线程很高，支付网关又报 ERR_TIMEOUT，Redis 内存也快满了，分别怎么处理？"
    out = await openai_services.graphs.chat.ainvoke(
        run_input(q), {"configurable": {"thread_id": uuid.uuid4().hex}}, context=Context()
    )
    by_tool = {}
    for r, usage in zip(stub.requests, stub.usages, strict=True):
        names = {t["function"]["name"] for t in r.get("tools") or []}
        role = "planner" if "Plan" in names else "executor" if names else "answer"
        by_tool.setdefault(role, []).append((r["messages"], usage))
    (planner,) = by_tool["planner"]
    system, task = planner[0][0]["content"], planner[0][1]["content"]
    assert all(line in system for line in _prompt_lines("chat_planner"))  # every rule, verbatim
    assert "domains:" in system and json.loads(task.split("```json")[1].split("```")[0])[
        "symptoms"
    ] == [
        "订单服务 HikariCP 连接池等待线程很高",
        "支付网关又报 ERR_TIMEOUT",
        "Redis 内存也快满了，分别怎么处理",
    ]
    assert planner[1]["prompt_tokens"] <= 2000
    for messages, _ in by_tool["executor"]:  # FS-5: the four constraints, never the map
        assert all(line in messages[0]["content"] for line in _prompt_lines("chat_executor"))
        assert "domains:" not in messages[0]["content"]
    (answer,) = by_tool["answer"]
    assert all(line in answer[0][0]["content"] for line in _prompt_lines("chat_answer"))
    body = answer[0][1]["content"]
    evidence = json.loads(body[body.index("```json") + 7 : body.rindex("```")])["evidence"]
    steps = {f["instruction"] for f in out["executor_feedback"]}
    assert len(steps) == 3 and {e.get("step") for e in evidence} == steps
    assert answer[1]["prompt_tokens"] <= Context().answer_evidence_tokens + 800
