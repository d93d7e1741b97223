"""Whole runs on the offline stack: a follow-up in one conversation uses the conversation, and
re-running an unchanged AI-Ops session reports no divergence."""

from __future__ import annotations

import dataclasses
import uuid

from persistence import repository as repo
from runs.divergence import divergence

QUESTION = "ERR_TIMEOUT 是什么意思？"
FOLLOW_UP = "那收到它之后可以直接重试吗？"


async def _trace(services, sid: str):  # noqa: ANN001, ANN202
    async with services.db.session() as db:
        return await repo.get_trace(db, sid)


async def test_a_follow_up_looks_up_the_earlier_subject(client, services) -> None:  # noqa: ANN001
    conversation = f"oncall-{uuid.uuid4().hex[:8]}"
    first = await client.post("/api/chat", json={"id": conversation, "question": QUESTION})
    assert first.status_code == 200 and "api/payment-errors.md" in first.json()["answer"]
    r = await client.post("/api/chat", json={"id": conversation, "question": FOLLOW_UP})
    assert r.status_code == 200, r.text
    answer = r.json()["answer"]
    # It answers from the payment runbook's retry rules, not "nothing found".
    assert "api/payment-errors.md" in answer and "未找到" not in answer
    assert "重试" in answer and "Idempotency-Key" in answer
    trace = await _trace(services, r.json()["sessionId"])
    queries = [
        i.input_params["query"] for i in trace.invocations if i.tool_name == "lookup_knowledge"
    ]
    assert queries and "ERR_TIMEOUT" in queries[0] and "重试" in queries[0]
    # The same question in a new conversation has nothing to refer back to.
    alone = await client.post("/api/chat", json={"question": FOLLOW_UP})
    alone_trace = await _trace(services, alone.json()["sessionId"])
    assert all(
        "ERR_TIMEOUT" not in i.input_params.get("query", "") for i in alone_trace.invocations
    )


async def test_rerunning_an_unchanged_aiops_session_reports_no_divergence(services) -> None:  # noqa: ANN001
    original = await services.runner().run("", flow="AI_OPS")
    assert original.status == "SUCCESS"
    replayer = services.replayer()
    for _ in range(3):
        report = await replayer.rerun(original.session_id)
        assert report["identical"], report["first_divergence"]
    recorded = await _trace(services, original.session_id)
    replayed = await _trace(services, report["replay_session_id"])
    # A step's parallel calls (a lookup and a log query) finish, and are recorded, in whatever
    # order they complete: the same results in another order are no divergence …
    by_step: dict[int | None, int] = {}
    for inv in replayed.invocations:
        by_step[inv.step_id] = by_step.get(inv.step_id, 0) + 1
    assert max(by_step.values()) >= 2, "the AI-Ops run made no parallel tool calls"
    reordered = dataclasses.replace(replayed, invocations=replayed.invocations[::-1])
    assert divergence(recorded, reordered, [])["identical"]
    # … while a different result within such a step still is one.
    last = replayed.invocations[-1]
    changed = last.model_copy(update={"output_preview": "something else"})
    altered = dataclasses.replace(replayed, invocations=[*replayed.invocations[:-1], changed])
    report = divergence(recorded, altered, [])
    assert not report["identical"]
    assert report["first_divergence"]["kind"] == "tool_result"
