"""Deterministic loop rules, no model call. Pure.

The nodes use them to keep the supervisor → planner ⇄ executor loop well-formed whatever a model
says (never execute a finished or already-executed step; check the alerts before analysing them);
the offline model uses the same rules as its whole policy for these roles.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

Agent = Literal["planner", "executor", "finish"]


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
