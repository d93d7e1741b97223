"""The AI-Ops alert-analysis report, built only from what the tools returned. Pure.

Sections: 活跃告警清单 / 告警根因分析N / 处理方案执行N / 未能找到的信息 / 结论.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from graph.evidence import Evidence
from graph.excerpt import Line, as_markdown, select

META_PREFIXES = ("摘要：", "章节：", "《", "正文节选")
ACTION_HINT = re.compile(
    r"步骤|执行|检查|调整|扩容|重启|回滚|限流|降级|清理|设置|修改|CONFIG|kubectl|SHOW|SET ", re.I
)


def _alert_terms(alert: dict[str, Any]) -> str:
    labels = alert.get("labels", {})
    return " ".join(
        [
            alert.get("alertname", ""),
            alert.get("summary", ""),
            alert.get("description", ""),
            *map(str, labels.values()),
        ]
    )


def _is_action(ln: Line) -> bool:
    return (ln.bullet or ln.code or bool(ACTION_HINT.search(ln.text))) and not ln.text.startswith(
        META_PREFIXES
    )


def _steps(text: str, alert: dict[str, Any], limit: int = 6) -> list[str]:
    """The runbook's steps for this alert as a Markdown list: its numbered lists, whole and in
    their own numbering; without any, up to ``limit`` action lines numbered in order."""
    lines = select(_alert_terms(alert), text, 14)
    if numbered := [ln for ln in lines if ln.group is not None]:
        return as_markdown(numbered)
    actions = [ln for ln in lines if _is_action(ln)][:limit]
    return [f"{n}. {ln.markdown()[2:]}" for n, ln in enumerate(actions, 1)]


def _alert_table(alerts: Sequence[dict[str, Any]]) -> list[str]:
    if not alerts:
        return ["未查询到活跃告警（或告警查询失败）。"]
    out = ["| # | 告警 | 级别 | 服务 | 开始时间 | 摘要 |", "|---|---|---|---|---|---|"]
    for i, a in enumerate(alerts, 1):
        out.append(
            f"| {i} | {a['alertname']} | {a['severity']} | {a['service']} | {a.get('activeAt') or '-'} | {a.get('summary', '')} |"
        )
    return out


def _runbooks(evs: list[Evidence]) -> list[tuple[str, str]]:
    """(source, text) of every single-document content the lookups returned."""
    return [
        (src, text)
        for ev in evs
        if ev.tool == "lookup_knowledge" and ev.ok
        for src, text in ev.contents()
        if "," not in src and text
    ]


def _analysis(i: int, a: dict[str, Any], evs: list[Evidence], missing: list[str]) -> list[str]:
    """One alert's root-cause and action sections; what is missing goes to ``missing``."""
    name = a["alertname"]
    docs = _runbooks(evs)
    logs = [x for ev in evs if ev.tool == "query_logs" and ev.ok for x in ev.data.get("lines", [])]
    out = [
        "",
        f"## 告警根因分析{i}：{name}",
        "",
        f"- **现象**：{a.get('description') or a.get('summary', '')}",
    ]
    if logs:
        out.append("- **日志证据**：")
        out += [f"  - `{x.get('ts', '')}` {x.get('message', '')}" for x in logs[-4:]]
    else:
        missing.append(f"告警 {name}：服务 {a['service']} 没有查到相关错误日志")
    if docs:
        src, text = docs[0]
        out.append(f"- **手册依据**（{src}）：")
        basis = [ln for ln in select(_alert_terms(a), text, 4) if ln.group is None]
        out += as_markdown(basis, indent="  ")
    else:
        missing.append(f"告警 {name}：知识库中没有找到匹配的处理手册")
    missing += [f"告警 {name}：{ev.tool} 调用失败（{ev.text[:120]}）" for ev in evs if not ev.ok]
    out += ["", f"## 处理方案执行{i}：{name}", ""]
    blocks = [(src, steps) for src, text in docs if (steps := _steps(text, a))][:2]
    for src, steps in blocks:
        out += [f"**{src}**", ""] if len(blocks) > 1 else []
        out += [*steps, ""]
    if blocks:
        out.append(f"来源：{'、'.join(dict.fromkeys(src for src, _ in docs))}")
    else:
        out.append("知识库证据中没有可执行的处理步骤，请人工确认处置方案。")
    return out


def _conclusion(
    alerts: Sequence[dict[str, Any]], analysed: int, with_runbook: int, stop_reason: str | None
) -> str:
    text = (
        f"共 {len(alerts)} 条活跃告警，已分析 {analysed} 条，其中 {with_runbook} 条找到处理手册。"
    )
    if stop_reason:
        text += f" 分析因「{stop_reason}」提前结束，结论基于已收集到的证据。"
    if alerts:
        worst = alerts[0]
        text += f" 优先处理 {worst['severity']} 级告警 {worst['alertname']}（{worst['service']}）。"
    return text


def build_report(
    alerts: Sequence[dict[str, Any]],
    evidence_by_alert: dict[str, list[Evidence]],
    *,
    stop_reason: str | None = None,
) -> str:
    out = ["# 告警分析报告", "", "## 活跃告警清单", "", *_alert_table(alerts)]
    missing = [] if alerts else ["活跃告警：告警查询没有返回任何告警"]
    analysed = with_runbook = 0
    for i, a in enumerate(alerts, 1):
        evs = evidence_by_alert.get(a["alertname"], [])
        if not evs:
            missing.append(
                f"告警 {a['alertname']}：未被分析（{stop_reason or '没有对应的执行步骤'}）"
            )
            continue
        analysed += 1
        with_runbook += bool(_runbooks(evs))
        out += _analysis(i, a, evs, missing)
    out += ["", "## 未能找到的信息", ""]
    out += [f"- {m}" for m in missing] if missing else ["- 无：每条告警都有日志与手册证据。"]
    out += ["", "## 结论", "", _conclusion(alerts, analysed, with_runbook, stop_reason)]
    return "\n".join(out)
