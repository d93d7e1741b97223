"""The optional LLM judge: does the answer answer the question? Scored apart from the checks.

Only with a hosted model (the offline model cannot judge prose). Its score is stored and shown next
to the deterministic checks and never changes a pass or a fail: a judge is a model too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from evals.checks import Observation
from evals.schema import Scenario

PROMPT = (Path(__file__).resolve().parent / "prompts" / "judge.md").read_text(encoding="utf-8")
ANSWER_CHARS = 6000


class Judgement(BaseModel):
    """How well the answer answers the question."""

    score: float = Field(ge=0, le=1, description="0 (does not answer) to 1 (answers it fully)")
    reason: str = Field(default="", description="one or two sentences")


def judge_input(scenario: Scenario, obs: Observation) -> dict[str, Any]:
    e = scenario.expected
    asked: dict[str, Any] = {"questions": obs.questions}
    if scenario.flow == "aiops":
        asked["alerts"] = [a.labels.get("alertname") for a in scenario.world.alerts]
    return {
        **asked,
        "intent": scenario.intent,
        "answer": obs.answer[:ANSWER_CHARS],
        "a right answer": {
            "cites one of": e.runbooks,
            "says no runbook covers it": e.no_runbook,
            "root cause": e.cause.model_dump() if e.cause else None,
            "names": e.names,
        },
    }


async def judge(model: BaseChatModel, name: str, scenario: Scenario, obs: Observation) -> dict:
    """``{"model", "score", "reason"}``, or ``{"model", "error"}`` when the judge gave none."""
    data = json.dumps(judge_input(scenario, obs), ensure_ascii=False, indent=1)
    structured = model.with_structured_output(Judgement, method="function_calling")
    try:
        out = await structured.ainvoke([SystemMessage(PROMPT), HumanMessage(data)])
    except Exception as exc:  # a judge failing must not fail the eval run
        return {"model": name, "error": str(exc).splitlines()[0][:300] if str(exc) else "failed"}
    if not isinstance(out, Judgement):
        return {"model": name, "error": "the judge returned no Judgement"}
    return {"model": name, "score": round(out.score, 3), "reason": out.reason[:500]}
