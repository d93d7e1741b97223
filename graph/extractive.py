"""Answers made from tool evidence without a model: the extractive answer. Pure (given ``read``).

The nodes use it when a hard limit ends a step or a model answers with nothing; the offline model
answers with it. With ``read`` (a document's title and Markdown by path, for documents in the
base) each runbook's part is the sections the question's intent asks for (``graph.runbook_answer``);
without it, the lines of the returned content that match the question (``graph.excerpt``). A
multi-symptom question gets one part per symptom, each from its own runbook; documents that answer
none of them are left out, and only the documents shown are cited.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from graph.evidence import Evidence
from graph.excerpt import as_markdown, quote, select
from graph.intent import Intent, intents
from graph.runbook_answer import ANSWERING, REFERENCE, document_part, not_found, reference_caveat
from retrieval.parsing.terms import query_terms
from retrieval.parsing.textmatch import bigrams, overlap

Reader = Callable[[str], "tuple[str, str] | None"]  # path → (title, Markdown body)
ANSWER_CHARS = 3600  # all runbook parts together; each gets its share, at least PART_CHARS
# Several symptoms: each part is one symptom's first moves, the whole stays one screen (and the
# three-symptom chat within its 7,800-token ceiling, bench_cost.py).
MULTI_ANSWER_CHARS = 2400
PART_CHARS = 700


@dataclass(frozen=True)
class Doc:
    source: str
    content: str
    level: str  # the lookup's (or, multi-symptom, the aspect's) relevance level
    aspect: str  # the symptom it answers ('' for a single-symptom lookup)
    primary: bool
    label: str = ""  # what it was looked up for: the aspect, else the lookup's query


def _near(question: str, read: Reader | None) -> Callable[[Doc], float]:
    q = bigrams(question)

    def near(d: Doc) -> float:
        title = (read(d.source) or ("", ""))[0] if read else ""
        return 3 * overlap(f"{title} {d.source}", q) + overlap(d.content, q)

    return near


def _rank(question: str, docs: list[Doc], read: Reader | None, level: str) -> list[Doc]:
    """A loose lookup's documents by how much their title and text share with the question.

    REFERENCE: its primary is only the nearest of several loose matches, a supplement may be
    nearer — the nearest one answers. HIGHLY_RELEVANT: a supplement nearer to the question than
    the primary answers beside it (both are about the symptom; the nearer names it)."""
    near = _near(question, read)
    if level == REFERENCE:
        return [replace(max(docs, key=near), primary=True)]
    head, rest = docs[0], docs[1:]
    better = [d for d in rest if near(d) > near(head) * 1.2]
    return [head, *sorted(better, key=lambda d: -near(d))[:1]]


def _served_before(
    ev: Evidence, evs: Sequence[Evidence], docs: list[Doc], read: Reader | None
) -> list[Doc]:
    """A symptom whose lookup returned nothing new because an earlier lookup already served its
    runbook (as a supplement): that supplement, when it is the nearest to this lookup's query."""
    query = str(ev.args.get("query") or "")
    if not query or ev.data.get("primary"):
        return []
    shown = {d.source for d in docs}
    pool = [
        Doc(str(x.get("source", "")), str(x.get("content", "")), "HIGHLY_RELEVANT", "", True, query)
        for e in evs
        if e.tool == "lookup_knowledge" and e is not ev
        for x in e.data.get("supplement", [])
        if x.get("source") and x.get("content") and x.get("source") not in shown
    ]
    message = str(ev.data.get("message") or "")
    named = [d for d in pool if read and (t := read(d.source)) and f"《{t[0]}》" in message]
    if named:  # the lookup says which runbook it already served
        return named[:1]
    near = _near(query, read)
    best = max(pool, key=near, default=None)
    return [best] if best is not None and near(best) > 0 else []


def _docs(ev: Evidence, question: str = "", read: Reader | None = None) -> list[Doc]:
    """The documents of one lookup worth a part: its primary, and in a multi-symptom lookup each
    aspect's document that answers (a supplement of a single-symptom lookup is left out)."""
    d = ev.data
    level = str(d.get("relevanceLevel") or "")
    out: list[Doc] = []
    for i, item in enumerate([d.get("primary") or {}, *d.get("supplement", [])]):
        source, content = str(item.get("source", "")), str(item.get("content", ""))
        if not source or not content or "," in source:
            continue
        aspect = str(item.get("aspect") or "")
        own = str(item.get("relevanceLevel") or level)
        label = aspect or str(ev.args.get("query") or "")
        loose = level in (REFERENCE, "HIGHLY_RELEVANT") and not aspect
        if i == 0 or (aspect and own in ANSWERING) or loose:
            out.append(Doc(source, content, own, aspect, i == 0, label))
    if out and level in (REFERENCE, "HIGHLY_RELEVANT") and not any(d.aspect for d in out):
        return _rank(str(ev.args.get("query") or question), out, read, level)
    return out


def _fallback_part(question: str, doc: Doc) -> str:
    lines = as_markdown(select(question, doc.content, 6))
    head = f"**{doc.source}**"
    if doc.level == REFERENCE:
        head = reference_caveat(doc.source) + "\n\n" + head
    return head + "\n" + "\n".join(lines)


def _part(question: str, doc: Doc, read: Reader | None, budget: int, wanted: list[Intent]) -> str:
    found = read(doc.source) if read else None
    if not found:
        return _fallback_part(question, doc)
    title, body = found
    return document_part(
        question, doc.source, title, body, level=doc.level, budget=budget, wanted=wanted
    )


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
        shown = ev.data.get("lines", [])[-5:]
        lines = [f"- {x.get('ts', '')} {x.get('message', '')}" for x in shown]
        lines += [
            f"- 代码位置：日志中的堆栈指向 `{where}`（{file}）"
            for where, file in code_frames(str(x.get("message", "")) for x in shown)
        ]
        return f"**{ev.data.get('service', '')} 日志**\n" + ("\n".join(lines) or "- 无匹配日志")
    if ev.tool == "get_current_time":
        return f"当前时间：{ev.data.get('local', ev.text)}"
    return None


# A Java stack frame ("at com.acme.ExportService.export(ExportService.java:87)") or a Python one
# ('File "app/export.py", line 87, in export'); the JDK's own frames say nothing about the cause.
_JAVA_FRAME = re.compile(r"\bat ((?:[\w$]+\.)+[\w$<>]+)\(([\w$]+\.\w+:\d+)\)")
_PY_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\w+)')
_PLATFORM = ("java.", "javax.", "jdk.", "sun.", "kotlin.", "scala.")


def code_frames(messages: Iterable[str], limit: int = 2) -> list[tuple[str, str]]:
    """(where, file:line) of the application frames the log lines name, first seen first: the
    place an exception or a leak detector points at, which the answer names as a clue."""
    out: list[tuple[str, str]] = []
    for message in messages:
        found = [
            (m[1], m[2]) for m in _JAVA_FRAME.finditer(message) if not m[1].startswith(_PLATFORM)
        ]
        found += [(m[3], f"{m[1]}:{m[2]}") for m in _PY_FRAME.finditer(message)]
        out += [f for f in found if f not in out]
    return out[:limit]


def _topic(question: str) -> str:
    return " ".join(query_terms(question)[:4])


def extractive_answer(
    question: str,
    evs: Sequence[Evidence],
    *,
    report: bool = False,
    focus: str = "",
    read: Reader | None = None,
) -> str:
    """Other tool results, then each answering document's part, then the documents cited.

    ``focus`` picks the sections instead of the question when it says more (a follow-up question
    with its subject resolved from the conversation); replies still quote the question."""
    ask = focus or question
    others: list[str] = []
    docs: list[Doc] = []
    failed: list[str] = []
    looked = False
    for ev in evs:
        if ev.tool == "lookup_knowledge":
            looked = True
            if not ev.ok:
                failed.append(f"知识库检索失败：{ev.text[:200]}")
                continue
            own = [x for x in _docs(ev, ask, read) if x.source not in {d.source for d in docs}]
            docs += own or _served_before(ev, evs, docs, read)
        elif (part := _other_part(ev)) is not None:
            others.append(part)
    # A REFERENCE document is kept only when nothing better answers its symptom.
    if any(d.level in ANSWERING for d in docs):
        docs = [d for d in docs if d.level in ANSWERING or d.primary]
    multi = len({d.aspect for d in docs if d.aspect}) > 1 or len(docs) > 1
    symptoms = {d.aspect or d.label for d in docs}  # one document's supplements share a label
    total = MULTI_ANSWER_CHARS if len(symptoms) > 1 else ANSWER_CHARS
    budget = max(PART_CHARS, total // max(1, len(docs)))
    parts: list[str] = []
    for i, d in enumerate(docs, 1):
        # One symptom's part answers that symptom, with the intent of the whole question.
        text = _part(d.label if multi else ask, d, None if report else read, budget, intents(ask))
        if multi:
            text = f"### {i}. {d.label or d.source}\n\n{text}"
        parts.append(text)
    body_parts = [*others, *failed, *parts]
    if looked and not docs and not failed:
        body_parts.append(not_found(quote(question), _topic(ask)))
    if not body_parts:
        body_parts = [f"没有可用的工具结果来回答「{quote(question)}」。"]
    cited = [d.source for d in docs]
    tail = f"\n\n来源：{'、'.join(cited)}" if cited else ""
    head = "执行结果：\n\n" if report else ""
    return head + "\n\n".join(body_parts) + tail
