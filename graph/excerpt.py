"""Excerpts of runbook text for answers written without a model. Pure.

The lines that share the most with the question, as clean Markdown an on-call engineer can follow:
a numbered step is never shown alone — when one step of a numbered list is picked, the whole list
comes with it, in its own numbering — list markers are not doubled ("- - x"), and a command from a
code block is shown as inline code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from retrieval.parsing.textmatch import bigrams, overlap

NUMBERED = re.compile(r"^(\d{1,3})(?:[.)]\s+|、\s*)(.+)$")
# "- x", "* x", "+ x"; not "**bold**" (the marker needs a space after it).
BULLET = re.compile(r"^[-*+]\s+(.+)$")
HEADING = re.compile(r"^#{1,6}\s")
FENCE = re.compile(r"^(```|~~~)")
_CODEISH = re.compile(r'^\s*["{}\[\]]')
MAX_STEPS = 12  # a numbered list longer than this is cut, and says so


@dataclass(frozen=True)
class Line:
    """One line of a document that may go into an excerpt."""

    index: int  # position in the document, to keep document order
    text: str  # without its list marker
    number: int | None = None  # its number, when it is a step of a numbered list
    group: int | None = None  # which numbered list it belongs to
    code: bool = False  # a line from a fenced code block
    bullet: bool = False  # an item of a bulleted list

    def markdown(self) -> str:
        if self.number is not None:
            return f"{self.number}. {self.text}"
        if self.code:
            return "- `" + self.text.replace("`", "'") + "`"
        return f"- {self.text}"


def _balanced(text: str) -> str:
    """``text`` without emphasis or code marks left open (a line cut short: "**客户端自…"), which
    would otherwise swallow the rest of the answer or show as stray asterisks."""
    if text.count("**") % 2:
        text = text.replace("**", "")
    if text.count("`") % 2:
        text = text.replace("`", "")
    return text


def _wanted(text: str) -> bool:
    """Lines worth quoting: not table rules, separators, bare punctuation or JSON fragments."""
    return (
        len(text) >= 6
        and not text.startswith(("|---", "---"))
        and not set(text) <= set("-|=#* ")
        and not _CODEISH.match(text)
    )


def parse(text: str) -> list[Line]:
    """The document's quotable lines, each numbered step tagged with its list.

    A list is a run of steps numbered 1, 2, 3… within one section; code blocks and paragraphs
    between two steps do not end it (runbooks put the command under its step)."""
    out: list[Line] = []
    in_code, group, last = False, 0, None
    for i, raw in enumerate(text.splitlines()):
        line = raw.strip()
        if FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:
            if _wanted(line) and not line.startswith("#"):
                out.append(Line(i, line, code=True))
            continue
        if HEADING.match(line):
            last = None
            continue
        if (m := NUMBERED.match(line)) and not raw[:1].isspace():
            n = int(m.group(1))
            if last is None or n != last + 1:
                group += 1
            last = n
            out.append(Line(i, _balanced(m.group(2).strip()), number=n, group=group))
            continue
        bullet = BULLET.match(line)
        if bullet:
            line = bullet.group(1).strip()
        if _wanted(line):
            out.append(Line(i, _balanced(line), bullet=bool(bullet)))
    return out


def _whole_lists(picked: list[Line], lines: list[Line]) -> list[Line]:
    """``picked`` plus every step of each numbered list one of them belongs to."""
    groups = {ln.group for ln in picked if ln.group is not None}
    steps = [ln for ln in lines if ln.group in groups]
    return sorted({*picked, *steps}, key=lambda ln: ln.index)


def select(question: str, text: str, limit: int = 6) -> list[Line]:
    """The lines of ``text`` that share the most with the question, in document order, with
    numbered lists kept whole. Nothing overlaps: the opening lines."""
    q = bigrams(question)
    lines = parse(text)
    scored = sorted(lines, key=lambda ln: (-overlap(ln.text, q), ln.index))[:limit]
    picked = [ln for ln in scored if overlap(ln.text, q) > 0]
    if not picked:
        picked = [ln for ln in lines if not ln.code][: min(limit, 3)]
    return _whole_lists(picked, lines)


def as_markdown(lines: list[Line], indent: str = "") -> list[str]:
    """Markdown list lines. A numbered list and the bullets around it are kept apart by a blank
    line; a list cut at ``MAX_STEPS`` says where the rest is; steps whose list does not start at 1
    in this text (a chunk that begins mid-list) keep their own number in words, since a Markdown
    list would renumber them from 1."""
    out: list[str] = []
    prev: Line | None = None
    first: dict[int, int] = {}
    shown: dict[int, int] = {}
    for ln in lines:
        text = ln.markdown()
        if ln.group is not None and ln.number is not None:
            first.setdefault(ln.group, ln.number)
            shown[ln.group] = shown.get(ln.group, 0) + 1
            if shown[ln.group] > MAX_STEPS:
                if shown[ln.group] == MAX_STEPS + 1:
                    out.append(f"{indent}- （后续步骤见来源文档）")
                continue
            if first[ln.group] != 1:
                text = f"- 第 {ln.number} 步：{ln.text}"
        if prev is not None and (prev.group is None) != (ln.group is None):
            out.append("")
        out.append(indent + text)
        prev = ln
    return out


def quote(question: str, limit: int = 200) -> str:
    """The question for 「…」 in a reply: whole, on one line; a very long one is cut at a word
    boundary (never inside a word) and marked with an ellipsis."""
    text = " ".join(question.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,.;:，。；：") + "…"
