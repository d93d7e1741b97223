"""A runbook's sections, what each is for, and which of them answer a question. Pure.

A section is a heading and the Markdown under it up to the next heading (headings inside code
blocks are comments, not sections). Its kinds come from its heading, in either language
(含义/症状/原因/诊断/排查/止血/处理/预防, Meaning/Symptoms/Causes/Diagnosis/Mitigation/Prevention…),
and the question's intents (``graph.intent``) weigh them: a fix question gets the steps and the
止血 section, a what-is question the meaning. Sections are quoted whole (their own numbering,
their code blocks), so nothing is cut mid-step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from graph.intent import Intent
from retrieval.parsing.textmatch import bigrams, overlap

HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")

# Heading words per kind. A heading may carry several kinds ("Common causes and fixes").
KINDS: dict[str, re.Pattern[str]] = {
    "symptom": re.compile(r"症状|现象|危害|告警表现|symptom", re.I),
    "meaning": re.compile(
        r"含义|定义|详解|是什么|原理|概述|按报错|错误码|meaning|what (?:is|does)|overview|definition",
        re.I,
    ),
    "cause": re.compile(r"原因|为什么|为何|根因(?!修复)|陷阱|误区|cause|\bwhy\b|pattern", re.I),
    "diagnosis": re.compile(
        r"第[一二三四五六七八九十\d]+步|步骤|诊断|排查|判断|确认|定位|发现|复现|看|查|采集|分诊"
        r"|\bstep \d|diagnos|\bcheck\b|\bread\b|inspect|\bfind|\bwhich\b|what does .* serve"
        r"|\bis it\b",
        re.I,
    ),
    "mitigation": re.compile(
        r"止血|紧急|应急|兜底|摘除|mitigation|emergency|keep .* (?:writing|serving)"
        r"|out of service|during an incident",
        re.I,
    ),
    "fix": re.compile(
        r"处理|处置|修复|根治|解决|清理|释放|腾|删除|拆分|手动切换|调大|恢复|重试|情况[一二三四五六七八九十]"
        r"|\bfix|repair|renew|recover|free space|clean|handl|retry|application side",
        re.I,
    ),
    "first": re.compile(r"第一步|首先|先|\bstep 1\b|\bfirst\b|分诊|triage", re.I),
    "prevention": re.compile(r"预防|长期|监控|复盘|prevention|monitor|long[- ]term", re.I),
}

# How much each kind answers each intent (0: not at all).
WEIGHTS: dict[Intent, dict[str, int]] = {
    Intent.WHAT_IS: {"meaning": 4, "cause": 2, "symptom": 1, "fix": 1},
    Intent.WHY: {"cause": 4, "diagnosis": 2, "meaning": 2, "fix": 1},
    Intent.DIAGNOSE: {"diagnosis": 4, "cause": 1},
    Intent.FIX: {"mitigation": 5, "fix": 4, "diagnosis": 2, "cause": 1},
    Intent.FIRST_STEP: {"mitigation": 5, "first": 4, "diagnosis": 2},
    Intent.GENERAL: {"diagnosis": 2, "mitigation": 2, "fix": 2, "meaning": 2, "cause": 2},
}


@dataclass(frozen=True)
class Section:
    index: int  # order in the document
    level: int  # heading level (1 = the title)
    heading: str
    parents: tuple[str, ...]  # the headings above it, outermost first
    body: str  # the Markdown under the heading, up to the next heading

    @property
    def kinds(self) -> set[str]:
        """What the section is for, from its heading; the title's words say what the whole
        document is for, not its opening paragraph."""
        if self.level <= 1:
            return set()
        return {k for k, p in KINDS.items() if p.search(self.heading)}

    @property
    def inherited(self) -> set[str]:
        """Kinds of the headings above it ("校验失败与修复" > "Migration checksum mismatch")."""
        return {k for k, p in KINDS.items() if any(p.search(h) for h in self.parents[1:])}

    @property
    def anchor(self) -> str:
        return "§" + self.heading

    def markdown(self) -> str:
        if self.level <= 1:  # the title: the answer already names the document
            return self.body
        return f"**{self.heading}**\n\n{self.body}" if self.body else f"**{self.heading}**"


def parse(text: str) -> list[Section]:
    """The document's sections in order; text before the first heading is section 0 ("")."""
    out: list[Section] = []
    stack: list[tuple[int, str]] = []
    head: tuple[int, str] = (0, "")
    body: list[str] = []
    in_code = False

    def close() -> None:
        text = "\n".join(body).strip("\n")
        if text.strip() or head[1]:
            parents = tuple(h for lvl, h in stack if lvl < head[0])
            out.append(Section(len(out), head[0], head[1], parents, text))

    for raw in text.splitlines():
        if FENCE.match(raw):
            in_code = not in_code
        m = None if in_code else HEADING.match(raw)
        if m and not FENCE.match(raw):
            close()
            level, title = len(m.group(1)), m.group(2).strip()
            stack = [(lvl, h) for lvl, h in stack if lvl < level] + [(level, title)]
            head, body = (level, title), []
            continue
        body.append(raw.rstrip())
    close()
    return out


def _relevance(s: Section, q: set[str]) -> float:
    """How much the section shares with the question: its heading (and its parents') weigh most."""
    return 6 * overlap(s.heading, q) + overlap(" ".join(s.parents), q) + overlap(s.body, q)


def _intro(s: Section, after: list[Section]) -> bool:
    """A short lead-in whose sub-sections carry the content ("按下面的顺序排查。")."""
    return bool(after) and after[0].level > s.level and len(s.body) < 100


QUOTED = re.compile(r"['\"“‘「]([^'\"”’」]{6,})['\"”’」]")
CODE = re.compile(r"[A-Za-z][A-Za-z0-9_.:\-]*(?:[A-Z_][A-Za-z0-9_.:\-]*|\d)[A-Za-z0-9_]*")


def literals(question: str) -> list[str]:
    """What the question quotes or names exactly: an error text in quotes, codes and identifiers
    (ERR_TIMEOUT, CrashLoopBackOff, 137)."""
    quoted = [m.group(1).strip() for m in QUOTED.finditer(question)]
    codes = [
        c
        for c in CODE.findall(question)
        if len(c) >= 4 and not c.isalpha() or c[1:] != c[1:].lower()
    ]
    return [*quoted, *[c for c in codes if len(c) >= 4]]


def _literal_bonus(s: Section, lits: list[str]) -> float:
    text = s.heading + "\n" + s.body
    hits = sum((6 if " " in lit else 1) for lit in lits if lit in text)
    return min(6.0, float(hits))


def score(
    s: Section, intents: Iterable[Intent], q: set[str], lits: list[str] | None = None
) -> float:
    own, above = s.kinds, s.inherited - s.kinds
    weights = [w for i in intents for k, w in WEIGHTS[i].items() if k in own]
    weights += [w - 1 for i in intents for k, w in WEIGHTS[i].items() if k in above]
    return max(weights, default=0) * 2 + _relevance(s, q) + _literal_bonus(s, lits or [])


def pick(
    sections: list[Section], question: str, intents: list[Intent], budget: int
) -> tuple[list[Section], list[Section], dict[int, int]]:
    """(the sections that answer, in document order; the answering ones left out for space;
    section index → the characters a section taken in part may use).

    Sections are taken best first while they fit ``budget`` characters; one that does not fit
    is taken in part (whole blocks) when a fair share of the budget is left, the best one always.
    Short lead-ins whose sub-sections carry the content are not candidates."""
    q, lits = bigrams(question), literals(question)
    cands = [
        (score(s, intents, q, lits), s)
        for i, s in enumerate(sections)
        if s.body.strip() and not _intro(s, sections[i + 1 : i + 2])
    ]
    cands = [(v, s) for v, s in cands if v >= 3.0]
    cands.sort(key=lambda x: (-x[0], x[1].index))
    taken: list[Section] = []
    left: list[Section] = []
    partial: dict[int, int] = {}
    used = 0
    for value, s in cands:
        size = len(s.markdown())
        room = budget - used
        if size <= room:
            taken.append(s)
            used += size
        elif not taken or (room >= 350 and value >= 4):
            taken.append(s)
            partial[s.index] = max(room, 350)
            used += partial[s.index]
        elif value >= 4:
            left.append(s)
    return sorted(taken, key=lambda s: s.index), sorted(left, key=lambda s: s.index), partial


def blocks(body: str) -> list[str]:
    """The body's blocks: paragraphs, whole lists (their items and what is indented under them)
    and whole code blocks — the units a long section may be shortened by, never cut inside."""
    out: list[str] = []
    cur: list[str] = []
    in_code = False
    for line in body.splitlines():
        if FENCE.match(line):
            cur.append(line)
            in_code = not in_code
            if not in_code:  # a code block ends its block
                out.append("\n".join(cur))
                cur = []
            continue
        if in_code:
            cur.append(line)
        elif not line.strip():
            if cur:
                out.append("\n".join(cur))
                cur = []
        else:
            cur.append(line)
    if cur:
        out.append("\n".join(cur))
    return out


def shortened(s: Section, limit: int) -> tuple[str, bool]:
    """The section's Markdown within ``limit`` characters, dropping whole trailing blocks (a list
    or a code block stays whole or goes); True when something was left out."""
    full = s.markdown()
    if len(full) <= limit:
        return full, False
    kept: list[str] = [f"**{s.heading}**"]
    size = len(kept[0])
    parts = blocks(s.body)
    for i, b in enumerate(parts):
        if i and size + len(b) + 2 > limit:
            return "\n\n".join(kept), True
        kept.append(b)
        size += len(b) + 2
    return "\n\n".join(kept), False


__all__ = ["KINDS", "Section", "blocks", "parse", "pick", "score", "shortened"]
