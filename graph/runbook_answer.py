"""One runbook's part of an answer, by the question's intent, worded by how well it matches. Pure.

The sections the intent asks for are quoted whole (steps in their own numbering, commands as code
blocks); what the part leaves out is named with the document to open. The wording follows the
lookup's level: PRECISE / HIGHLY_RELEVANT answer; REFERENCE first says the document may not match;
a lookup that found nothing says so once and what to add to the knowledge base.
"""

from __future__ import annotations

from graph.intent import Intent, intents
from graph.sections import Section, parse, pick, shortened

ANSWERING = {"PRECISE", "HIGHLY_RELEVANT"}
REFERENCE = "REFERENCE"
MAX_LEFT_OUT = 4  # section names listed as left out (the rest counted)


def reference_caveat(title: str, language_hint: str = "") -> str:
    return (
        f"注意：知识库中没有与问题直接对应的文档，以下《{title}》只是相近主题的参考，"
        "其中的原因和做法可能不适用于你的情况，请先核对再执行。"
    )


def not_found(question: str, topic: str) -> str:
    """The one "not found" sentence and what the knowledge base lacks."""
    what = topic or question
    return (
        f"知识库中未找到与「{question}」足够相关的文档。"
        f"建议在知识库中补充一篇关于「{what}」的 runbook（症状、诊断步骤、止血与修复），"
        "之后同类问题即可直接引用。"
    )


def _left_out_line(
    path: str, left: list[Section], shown: list[Section], all_: list[Section]
) -> str:
    shown_ix = {s.index for s in shown}
    rest = [s for s in all_ if s.level > 1 and s.index not in shown_ix and s.heading]
    names = [s.heading for s in left] + [s.heading for s in rest if s not in left]
    if not names:
        return ""
    listed = "、".join(f"「{n}」" for n in names[:MAX_LEFT_OUT])
    more = f" 等 {len(names)} 节" if len(names) > MAX_LEFT_OUT else ""
    return f"未展示：{listed}{more}，完整内容见 {path}"


def document_part(
    question: str,
    path: str,
    title: str,
    body: str,
    *,
    level: str = "",
    budget: int = 1800,
    wanted: list[Intent] | None = None,
) -> str:
    """The Markdown of one document's part: its caveat (REFERENCE), the sections that answer the
    question's intents, and what was left out."""
    sections = parse(body)
    taken, left, partial = pick(sections, question, wanted or intents(question), budget)
    head = f"**《{title}》**（{path}）"
    if level == REFERENCE:
        head = reference_caveat(title) + "\n\n" + head
    parts = [head]
    for s in taken:
        text, cut = shortened(s, partial.get(s.index, len(s.markdown())))
        parts.append(text + (f"\n\n（本节其余内容见 {path}）" if cut else ""))
    if line := _left_out_line(path, left, taken, sections):
        parts.append(f"（{line}）")
    return "\n\n".join(parts)


__all__ = ["ANSWERING", "REFERENCE", "document_part", "not_found", "reference_caveat"]
