"""Answers made from tool evidence without a model: the extractive answer. Pure.

The nodes use it when a hard limit ends a step or a model answers with nothing; the offline model
answers with it. Line selection (shared with the AI-Ops report) is ``graph.excerpt``.
"""

from __future__ import annotations

from collections.abc import Sequence

from graph.evidence import Evidence, all_sources
from graph.excerpt import as_markdown, quote, select


def _lookup_parts(question: str, ev: Evidence) -> tuple[list[str], bool]:
    if not ev.ok:
        return [f"知识库检索失败：{ev.text[:200]}"], False
    parts, found = [], False
    contents = ev.contents()
    for source, text in contents:
        if not text or "," in source:
            continue
        found = True
        lines = as_markdown(select(question, text, 6))
        parts.append(f"**{source}**\n" + "\n".join(lines))
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


def extractive_answer(
    question: str, evs: Sequence[Evidence], *, report: bool = False, focus: str = ""
) -> str:
    """The lines of each returned document that match the question, other tool results, sources.

    ``focus`` picks the lines instead of the question when it says more (a follow-up question
    with its subject resolved from the conversation); replies still quote the question."""
    parts: list[str] = []
    found_any = False
    for ev in evs:
        if ev.tool == "lookup_knowledge":
            lookup_parts, found = _lookup_parts(focus or question, ev)
            parts += lookup_parts
            found_any = found_any or found
        elif (part := _other_part(ev)) is not None:
            parts.append(part)
    sources = all_sources(evs)
    head = "执行结果：" if report else "根据知识库检索结果："
    if not found_any and any(e.tool == "lookup_knowledge" for e in evs):
        parts.append(f"知识库中未找到与「{quote(question)}」足够相关的文档。")
    body = "\n\n".join(parts) if parts else f"没有可用的工具结果来回答「{quote(question)}」。"
    tail = f"\n\n来源：{'、'.join(sources)}" if sources else ""
    return f"{head}\n\n{body}{tail}"
