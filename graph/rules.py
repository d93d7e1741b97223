"""Deterministic loop rules, no model call. Pure.

The nodes use them to keep the supervisor → planner ⇄ executor loop well-formed whatever a model
says (never execute a finished or already-executed step; check the alerts before analysing them);
the offline model uses the same rules as its whole policy for these roles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

Agent = Literal["planner", "executor", "finish"]
# A lookup result after which the executor prompt says to stop looking: judged precise or highly
# relevant, or refused because its document/domain was already served or the budget is spent.
STOP_LEVELS = {"PRECISE", "HIGHLY_RELEVANT"}
STOP_DEDUP = {"doc_retrieved", "domain_retrieved", "budget_exhausted"}


def next_agent(plan: Mapping[str, Any] | None) -> tuple[Agent, str]:
    """Who acts next given the current plan step, and why (one short sentence).

    This is the whole rules supervisor: queued steps become the current one as each is executed
    (``executor_done``), so the current step alone says whether to execute, plan or finish. A step
    marked ``final`` was the last of a batch the planner said completes the task."""
    if not plan:
        return "planner", "还没有计划"
    if plan.get("finish"):
        return "finish", "规划者声明 FINISH"
    if not plan.get("executed"):
        return "executor", "有待执行的计划步骤"
    if plan.get("final"):
        return "finish", "规划者给出的步骤已全部执行"
    return "planner", "上一步已执行，规划下一步"


def aiops_step(view: Mapping[str, Any]) -> dict[str, Any]:
    """The next AI-Ops plan step: query the alerts first, then one step per unanalysed alert."""
    if not view.get("alerts_checked"):
        return {
            "instruction": "查询当前活跃告警（query_prometheus_alerts）",
            "domains": [],
            "tools": ["query_prometheus_alerts"],
            "finish": False,
        }
    steps = alert_steps(view)
    return steps[0] if steps else {"instruction": "", "domains": [], "finish": True}


def alert_steps(view: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One step per active alert not analysed yet, in the order the alerts were listed."""
    done = set(view.get("analyzed", []))
    steps = []
    for a in view.get("alerts", []):
        if a["alertname"] in done:
            continue
        done.add(a["alertname"])
        labels = a.get("labels", {})
        terms = [a["alertname"], labels.get("error_code", ""), a.get("summary", "")]
        steps.append(
            {
                "instruction": f"分析告警 {a['alertname']}（服务 {a['service']}，级别 {a['severity']}）：检索处理手册并查询服务 {a['service']} 的错误日志",
                "domains": [],
                "query": " ".join(dict.fromkeys(t for t in terms if t)),
                "service": a["service"],
                "alert": a["alertname"],
                "tools": ["lookup_knowledge", "query_logs"],
                "finish": False,
            }
        )
    return steps


def _says_stop(result: ToolMessage, found_is_enough: bool = False) -> bool:
    art = result.artifact if isinstance(result.artifact, Mapping) else {}
    level = art.get("relevance_level")
    if found_is_enough and level not in (None, "NONE"):
        return True
    return level in STOP_LEVELS or art.get("dedup_reason") in STOP_DEDUP


def step_settled(
    planned_tools: Sequence[str], step: Sequence[AnyMessage], *, alert_step: bool = False
) -> bool:
    """True when a plan step needs no further model call: every tool the step named was called,
    the latest round's calls all succeeded, and each lookup in it says stop (the executor
    prompt's own rule). The model's next turn would only restate the results, which the step
    report then takes from the evidence instead. An AI-Ops alert step (``alert_step``) is settled
    by any runbook found: the report judges the runbook against the evidence itself."""
    start = next((i for i in range(len(step) - 1, -1, -1) if isinstance(step[i], AIMessage)), None)
    if start is None or not step[start].tool_calls:  # type: ignore[union-attr]
        return False
    called = {tc["name"] for m in step if isinstance(m, AIMessage) for tc in m.tool_calls}
    results = [m for m in step[start + 1 :] if isinstance(m, ToolMessage)]
    return (
        set(planned_tools) <= called
        and bool(results)
        and all(m.status != "error" for m in results)
        and all(_says_stop(m, alert_step) for m in results if m.name == "lookup_knowledge")
    )
