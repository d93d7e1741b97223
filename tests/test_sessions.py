"""Session records, evidence score, feedback, replay and resume (FS-6)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
import sqlalchemy as sa

from graph.context import Context
from graph.prompts import Prompts
from llm.factory import ModelFactory
from persistence import repository as repo
from persistence.evaluation import Call, evidence_score
from persistence.feedback import FeedbackError, SessionNotFound, submit_feedback
from persistence.models import CaseLibrary
from runs.replay import Replayer
from runs.runner import Runner
from tests.support.kb import started_services
from tests.support.scripted_model import VARIANTS, ScriptedFactory, ScriptedModel
from tests.support.spies import ModelInputs

COMPLEX = "支付网关 ERR_TIMEOUT 突增，同时订单服务 HikariCP 连接池超时，分别怎么排查？"


async def _trace(services, sid: str):  # noqa: ANN001, ANN202
    async with services.db.session() as db:
        return await repo.get_trace(db, sid)


@pytest.fixture(params=["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
async def stack(request, tmp_path_factory, embeddings, services):  # noqa: ANN001
    """The shared SQLite stack, or a MariaDB-backed one (records and checkpoints in MariaDB)."""
    if request.param == "sqlite":
        yield services
        return
    async with started_services(
        tmp_path_factory.mktemp("mysql-stack"), embeddings, mysql=True
    ) as svc:
        yield svc


async def test_one_chat_run_leaves_a_complete_trace(stack) -> None:  # noqa: ANN001
    runner, inputs = stack.runner(), ModelInputs()
    before = await _distribution(stack)
    result = await _run_with(runner, COMPLEX, inputs)
    await runner.drain()
    trace = await _trace(stack, result.session_id)
    s = trace.session
    assert s.status == "SUCCESS" and s.answer == result.answer and s.agent_flow == "CHAT"
    assert s.total_steps == len(trace.steps) == len(inputs.calls)  # one row per model call
    assert s.total_tool_calls == len(trace.invocations) == 2
    assert s.total_tokens == sum(st.token_count for st in trace.steps) > 0
    assert s.total_duration_ms is not None and s.completed_at is not None
    # The rules supervisor routes without a model call: the planner's is the first recorded step.
    assert [st.agent_name for st in trace.steps] == ["planner", "executor", "executor", "answer"]
    for inv in trace.invocations:
        assert inv.tool_name == "lookup_knowledge" and inv.success
        # ERR_TIMEOUT: L0 alone; HikariCP, a keyword other runbooks also explain: L1 agrees
        assert (
            inv.relevance_level == "PRECISE"
            and inv.dedup_reason is None
            and inv.retrieval_layer in {"L0", "L0+L1"}
        )
        assert inv.step_id in {st.id for st in trace.steps if st.has_tool_call}
        assert {
            "l0_titles",
            "l1_scores",
            "relevance_level",
            "completeness_hint",
            "retrieved_domains",
        } <= set(inv.retrieval_details)
        assert len(inv.output_preview) <= 500 < inv.output_length
    assert s.self_evaluation["evidence_score"] == 65  # +30 call, +35 L0 hit
    after = await _distribution(stack)
    assert after.get("PRECISE", 0) - before.get("PRECISE", 0) == 2


async def _run_with(runner: Runner, question: str, inputs: ModelInputs, **kw: Any):  # noqa: ANN202
    # Attach the spy next to the recorder by wrapping the graph's config callbacks.
    original = runner.config

    def config(*a: Any, **k: Any) -> dict[str, Any]:
        cfg = original(*a, **k)
        cfg["callbacks"] = [*cfg["callbacks"], inputs.handler]
        return cfg

    runner.config = config  # type: ignore[method-assign]
    try:
        return await runner.run(question, **kw)
    finally:
        runner.config = original  # type: ignore[method-assign]


async def _distribution(stack) -> dict:  # noqa: ANN001
    async with stack.db.session() as db:
        return await repo.relevance_distribution(db)


async def test_dedup_and_budget_are_recorded(services) -> None:  # noqa: ANN001
    view = dataclasses.replace(
        services.deps,
        models=ScriptedFactory(ScriptedModel(queries=VARIANTS[:10], sent_tokens=[])),
    )
    from graph.graphs import compile_graphs

    graphs = compile_graphs(view, services.checkpointer)
    runner = services.runner()
    result = await runner.run(
        "连接池问题", graph=graphs.chat, context=Context(max_executor_steps=15)
    )
    trace = await _trace(services, result.session_id)
    reasons = [i.dedup_reason for i in trace.invocations]
    assert reasons.count(None) == 3 and reasons.count("budget_exhausted") == 2
    assert reasons.count("doc_retrieved") + reasons.count("domain_retrieved") == 5
    refused = [i for i in trace.invocations if i.dedup_reason == "budget_exhausted"]
    assert all(i.relevance_level is None for i in refused)  # nothing was searched


class FlakyModels:
    """Offline models, but the n-th model call of the process raises once."""

    def __init__(self, base: ModelFactory, fail_at: int) -> None:
        self.base, self.fail_at, self.calls = base, fail_at, 0

    def for_role(self, role: str, ctx: Any = None):  # noqa: ANN201
        outer = self
        model = self.base.for_role(role, ctx)

        class Wrapper(type(model)):  # type: ignore[misc]
            def _reply(self, *a: Any, **k: Any):  # noqa: ANN202 - used by invoke and stream alike
                outer.calls += 1
                if outer.calls == outer.fail_at:
                    raise RuntimeError("model endpoint exploded")
                return super()._reply(*a, **k)

        return Wrapper(**model.model_dump())


async def test_failing_model_fails_the_run_with_partial_trace_and_resume_does_not_duplicate(
    services,
) -> None:  # noqa: ANN001
    from graph.graphs import compile_graphs

    flaky = FlakyModels(services.deps.models, fail_at=3)  # the second step's executor call
    graphs = compile_graphs(dataclasses.replace(services.deps, models=flaky), services.checkpointer)
    runner = Runner(services.db, graphs)
    failed = await runner.run(COMPLEX)
    await runner.drain()
    trace = await _trace(services, failed.session_id)
    assert (
        trace.session.status == "FAILED"
        and "model endpoint exploded" in trace.session.error_message
    )
    assert len(trace.steps) == 2 and len(trace.invocations) == 1  # the partial trace survives
    assert trace.session.self_evaluation["evidence_score"] == 0
    resumed = await runner.resume(failed.session_id)
    assert resumed.status == "SUCCESS" and resumed.session_id == failed.session_id
    trace = await _trace(services, failed.session_id)
    keys = [st.step_key for st in trace.steps]
    assert len(keys) == len(set(keys)) == 4  # the whole run, nothing twice
    assert len({i.call_key for i in trace.invocations}) == len(trace.invocations) == 2
    assert trace.session.status == "SUCCESS" and trace.session.error_message is None


async def test_failing_tool_is_recorded_and_the_run_goes_on(services, monkeypatch) -> None:  # noqa: ANN001
    from graph.graphs import compile_graphs
    from tools.observability import make_logs_tool

    tools = [
        make_logs_tool("http://127.0.0.1:9", timeout=1.0) if t.name == "query_logs" else t
        for t in services.deps.tools
    ]
    view = dataclasses.replace(services.deps, tools=tools)
    runner = Runner(services.db, compile_graphs(view, services.checkpointer))
    result = await runner.run("分析当前告警", flow="AI_OPS")
    trace = await _trace(services, result.session_id)
    failed = [i for i in trace.invocations if not i.success]
    assert result.status == "SUCCESS" and len(failed) == 3
    assert all(i.tool_name == "query_logs" and "cannot reach" in i.error_message for i in failed)


def test_evidence_score_factors() -> None:
    ok_l0 = Call("lookup_knowledge", True, 1, 0)
    ok_l1 = Call("lookup_knowledge", True, 0, 3)
    miss = Call("lookup_knowledge", True, 0, 0)
    failed = Call("query_logs", False)
    assert evidence_score("SUCCESS", [])["evidence_score"] == 0
    assert evidence_score("FAILED", [ok_l0])["evidence_score"] == 0
    assert evidence_score("SUCCESS", [ok_l0])["evidence_score"] == 65
    assert evidence_score("SUCCESS", [ok_l1])["evidence_score"] == 50
    assert evidence_score("SUCCESS", [ok_l1, miss])["evidence_score"] == 40
    assert evidence_score("SUCCESS", [miss, miss])["evidence_score"] == 10
    assert evidence_score("SUCCESS", [failed])["evidence_score"] == 0
    r = evidence_score("SUCCESS", [failed, failed])
    assert (
        r["source"] == "rule" and {"factor": "all tool calls failed", "points": -20} in r["factors"]
    )
    deduped = Call("lookup_knowledge", True, 0, 0, "budget_exhausted")
    assert evidence_score("SUCCESS", [ok_l0, deduped])["evidence_score"] == 65


async def test_feedback(services) -> None:  # noqa: ANN001
    runner = services.runner()
    result = await runner.run("ERR_TIMEOUT 是什么意思")
    with pytest.raises(FeedbackError):
        await submit_feedback(services.db, result.session_id, "meh")
    with pytest.raises(SessionNotFound):
        await submit_feedback(services.db, "nope", "useful")
    nu = await submit_feedback(services.db, result.session_id, "not_useful")
    assert nu.success and nu.case_id is None
    a, b = await asyncio.gather(
        submit_feedback(services.db, result.session_id, "useful"),
        submit_feedback(services.db, result.session_id, "useful"),
    )
    again = await submit_feedback(services.db, result.session_id, "useful")
    assert a.case_id == b.case_id == again.case_id is not None
    async with services.db.session() as db:
        cases = (
            (
                await db.execute(
                    sa.select(CaseLibrary).where(CaseLibrary.session_id == result.session_id)
                )
            )
            .scalars()
            .all()
        )
        row = await repo.get_session(db, result.session_id)
    assert len(cases) == 1
    case = cases[0]
    assert (
        case.title == "ERR_TIMEOUT 是什么意思"[:100]
        and case.solution == row.answer == case.root_cause
    )
    assert (case.category, case.source) == ("GENERAL", "AUTO")
    assert row.feedback == "useful" and row.status == "SUCCESS"


async def test_replay_reproduces_and_names_the_first_divergence(services) -> None:  # noqa: ANN001
    runner = services.runner()
    original = await runner.run(COMPLEX)
    replayer = services.replayer()
    report = await replayer.rerun(original.session_id)
    assert report["identical"] is True and report["same_answer"] and report["status"] == "SUCCESS"
    replay_trace = await _trace(services, report["replay_session_id"])
    assert replay_trace.session.replay_of == original.session_id
    orig_trace = await _trace(services, original.session_id)
    assert [(i.tool_name, i.input_params) for i in replay_trace.invocations] == [
        (i.tool_name, i.input_params) for i in orig_trace.invocations
    ]
    # Edit the planner prompt: the first planner step's input changes, and the report says so.
    texts = dict(services.deps.prompts.texts)
    texts["chat_planner"] = texts["chat_planner"].replace(
        "你是 SuperBiz Agent 的规划者", "你是一名严谨的规划者"
    )
    edited = dataclasses.replace(services.deps, prompts=Prompts(texts))
    replayer = Replayer(services.runner(), services.checkpointer, edited)
    changed = await replayer.rerun(original.session_id)
    first = changed["first_divergence"]
    assert changed["identical"] is False
    assert first == {**first, "step": 1, "agent": "planner", "kind": "model_input"}


async def test_time_travel_from_a_mid_run_checkpoint(services) -> None:  # noqa: ANN001
    runner = services.runner()
    original = await runner.run(COMPLEX)
    replayer = services.replayer()
    checkpoints = await replayer.checkpoints(original.session_id)
    assert checkpoints[0]["source"] == "input" and len(checkpoints) > 10
    middle = next(c for c in checkpoints if c["next"] == ["executor"] and c["step"] > 5)
    result = await replayer.from_checkpoint(original.session_id, middle["checkpoint_id"])
    assert result.status == "SUCCESS" and result.answer
    trace = await _trace(services, result.session_id)
    assert trace.session.replay_of == original.session_id
    assert [st.agent_name for st in trace.steps] == ["executor", "answer"]  # the second step on
    # the user's conversation was not forked
    latest = await services.graphs.chat.aget_state(
        {"configurable": {"thread_id": original.thread_id}}
    )
    assert latest.metadata["session_id"] == original.session_id


async def test_cli_lists_and_shows_sessions(services, capsys, monkeypatch) -> None:  # noqa: ANN001
    from persistence.__main__ import _sessions

    result = await services.runner().run("Flyway checksum mismatch 怎么修")
    import argparse

    assert (
        await _sessions(services.settings, argparse.Namespace(action="list", status=None, limit=50))
        == 0
    )
    assert result.session_id in capsys.readouterr().out
    assert (
        await _sessions(services.settings, argparse.Namespace(action="show", id=result.session_id))
        == 0
    )
    out = capsys.readouterr().out
    assert "lookup_knowledge" in out and "infrastructure/flyway-best-practices.md" in out
