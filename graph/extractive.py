"""Answers made from tool evidence without a model: line selection and the extractive answer. Pure.

The nodes use it when a hard limit ends a step or a model answers with nothing; the AI-Ops report
and the offline model build on the same line selection.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from graph.evidence import Evidence, all_sources
from retrieval.textmatch import bigrams, overlap

_CODEISH = re.compile(r'^\s*["{}\[\]]')


def select_lines(question: str, text: str, limit: int = 6) -> list[str]:
    """The lines of ``text`` that share the most with the question, in their original order."""
    q = bigrams(question)
    lines = [ln.strip() for ln in text.splitlines()]
    candidates = [
        (i, ln)
        for i, ln in enumerate(lines)
        if len(ln) >= 6
        and not ln.startswith(("```", "|---", "---"))
        and not set(ln) <= set("-|=#* ")
        and not _CODEISH.match(ln)
    ]
    scored = sorted(candidates, key=lambda x: (-overlap(x[1], q), x[0]))[:limit]
    picked = [ln for _, ln in sorted(scored, key=lambda x: x[0]) if overlap(ln, q) > 0]
    if not picked:  # nothing overlaps: fall back to the opening lines
        picked = [ln for _, ln in candidates[: min(limit, 3)]]
    return picked


def _lookup_parts(question: str, ev: Evidence) -> tuple[list[str], bool]:
    if not ev.ok:
        return [f"知识库检索失败：{ev.text[:200]}"], False
    parts, found = [], False
    contents = ev.contents()
    for source, text in contents:
        if not text or "," in source:
            continue
        found = True
        lines = select_lines(question, text, 6)
        parts.append(f"**{source}**\n" + "\n".join(f"- {ln}" for ln in lines))
    if not contents and ev.data.get("message"):
        parts.append(f"（{ev.data['message']}）")
    return parts, found


def _other_part(ev: Evidence) -> str | None:
    if not ev.ok:
        return f"{ev.tool} 调用失败：{ev.text[:200]}"
    if ev.tool == "query_prometheus_alerts":
        items = [
            f"- [{a['severity']}] {a['alertname']}（{a['service']}）：{a['summary']}"
            for a in ev.data.get("alerts", [])
        ]
        return "**活跃告警**\n" + ("\n".join(items) or "- 无")
    if ev.tool == "query_logs":
        lines = [
            f"- {x.get('ts', '')} {x.get('message', '')}" for x in ev.data.get("lines", [])[-5:]
        ]
        return f"**{ev.data.get('service', '')} 日志**\n" + ("\n".join(lines) or "- 无匹配日志")
    if ev.tool == "get_current_time":
        return f"当前时间：{ev.data.get('local', ev.text)}"
    return None


def extractive_answer(question: str, evs: Sequence[Evidence], *, report: bool = False) -> str:
    """The lines of each returned document that match the question, other tool results, sources."""
    parts: list[str] = []
    found_any = False
    for ev in evs:
        if ev.tool == "lookup_knowledge":
            lookup_parts, found = _lookup_parts(question, ev)
            parts += lookup_parts
            found_any = found_any or found
        elif (part := _other_part(ev)) is not None:
            parts.append(part)
    sources = all_sources(evs)
    head = "执行结果：" if report else "根据知识库检索结果："
    if not found_any and any(e.tool == "lookup_knowledge" for e in evs):
        parts.append(f"知识库中未找到与「{question[:60]}」足够相关的文档。")
    body = "\n\n".join(parts) if parts else f"没有可用的工具结果来回答「{question[:60]}」。"
    tail = f"\n\n来源：{'、'.join(sources)}" if sources else ""
    return f"{head}\n\n{body}{tail}"
