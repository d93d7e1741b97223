"""Which of a runbook's causes the evidence supports, which it rules out, and the runbook's
actions for the supported cause. Pure.

Rules, in order of strength:

* a signal of the evidence named in an item's own text (3), or only in its heading (1);
* an identifier of the evidence (``max.poll.interval.ms``) in the item's text (1 each, at most 2);
* a threshold in the item (``mem_fragmentation_ratio > 1.5``) met by a value in the evidence (3)
  — or not met: the item is ruled out, with the value that rules it out;
* an item about every channel / instance when the errors are on one only: ruled out.

An item needs 2 to count as supported. The actions are the supported item's own action column,
the item itself when it is an instruction, and the mitigation / fix items the same evidence
supports, in the runbook's order; then its follow-up steps and the first check to verify.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from graph.diagnosis.facts import Fact, Facts
from graph.diagnosis.lexicon import GLOBAL_SCOPE, SINGLE_SCOPE_TERMS
from graph.diagnosis.runbook import Item
from graph.ledger import Entry

SUPPORTED = 2
MAX_STEPS = 7
CAUSE_SECTIONS_EXCLUDED = {"prevent", "caution", "followup", "mitigate", "fix", "symptom"}
OPS = {
    ">": operator.gt,
    "大于": operator.gt,
    "超过": operator.gt,
    "高于": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "小于": operator.lt,
    "低于": operator.lt,
    "<=": operator.le,
    "=": operator.eq,
    "==": operator.eq,
    "等于": operator.eq,
}
THRESHOLD = re.compile(
    r"`?([A-Za-z][\w.]*)`?\s*(?:[\u4e00-\u9fff]{0,3})\s*(>=|<=|==|>|<|=|大于|超过|高于|小于|低于|等于)\s*"
    r"(-?\d+(?:\.\d+)?)"
)


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("**", "").replace("`", "")).lower()


@dataclass
class Judged:
    item: Item
    score: int = 0
    facts: list[Fact] = field(default_factory=list)
    refs: list[Entry] = field(default_factory=list)
    ruled_out: str = ""  # why the evidence rules it out
    cross: list[str] = field(default_factory=list)  # other alerts whose evidence supports it
    in_text: int = 0  # signals named in the item's own text (not only its heading)

    @property
    def supported(self) -> bool:
        """Enough for a cause: the score, with the evidence named in the item itself."""
        return self.score >= SUPPORTED and self.in_text > 0 and not self.ruled_out


def _has(text: str, terms: Sequence[str]) -> bool:
    return any(norm(t) in text for t in terms)


def judge(item: Item, facts: Sequence[Facts], lang: str) -> Judged:
    """Score one runbook item against the facts of one or more alerts (the first is its own)."""
    j = Judged(item)
    text = norm(f"{item.text} {item.action}")
    head = norm(" ".join(item.section))
    for fs in facts:
        for f in fs.signals:
            hit = 3 if _has(text, f.terms) else 1 if _has(head, f.terms) else 0
            if hit:
                j.score += hit
                j.in_text += hit == 3
                j.facts.append(f)
                j.refs += [r for r in f.refs if r not in j.refs]
                if fs is not facts[0] and fs.alert not in j.cross:
                    j.cross.append(fs.alert)
            if f.terms[: len(SINGLE_SCOPE_TERMS)] == SINGLE_SCOPE_TERMS and GLOBAL_SCOPE.search(
                item.text
            ):
                j.ruled_out = (
                    f"{f.says(lang)}，而这一条说的是全部范围"
                    if lang == "zh"
                    else f"{f.says(lang)}, while this is about all of them"
                )
        own = facts[0]
        if fs is own:
            hits = [i for i in own.identifiers if len(i) > 3 and i.lower() in text][:2]
            j.score += len(hits)
            j.refs += [own.identifiers[i] for i in hits if own.identifiers[i] not in j.refs]
            for key, op, limit in THRESHOLD.findall(f"{item.text} {item.action}"):
                if key not in own.values:
                    continue
                value, ref = own.values[key]
                if OPS[op](value, float(limit)):
                    j.score += 3
                    j.in_text += 1
                    j.refs.append(ref)
                else:
                    j.ruled_out = (
                        f"证据中 {key}={value:g}，不满足条件 {key} {op} {limit}"
                        if lang == "zh"
                        else f"the evidence shows {key}={value:g}, not {key} {op} {limit}"
                    )
                    j.refs.append(ref)
    if j.ruled_out:
        j.score = 0
    return j


def causes(items: Sequence[Item], facts: Sequence[Facts], lang: str) -> list[Judged]:
    """The cause candidates, best supported first (a runbook without a cause section falls back
    to its mitigation and fix items, which then name the cause themselves)."""
    judged = [judge(i, facts, lang) for i in items if i.text and i.section_kind() != "prevent"]
    # the overview before the first section and the symptom list describe, they name no cause
    pool = [
        j for j in judged if j.item.section and j.item.section_kind() not in CAUSE_SECTIONS_EXCLUDED
    ]
    if not any(j.supported for j in pool):
        pool = [j for j in judged if j.item.section_kind() in ("mitigate", "fix")]
    # a list item or table row is how a runbook enumerates causes; prose around it ranks after
    return sorted(pool, key=lambda j: (-j.score + 2 * (j.item.kind == "para"), j.item.order))


def ruled_out(items: Sequence[Item], facts: Sequence[Facts], lang: str) -> list[Judged]:
    return [j for i in items if (j := judge(i, facts, lang)).ruled_out]


@dataclass
class Step:
    text: str
    code: list[str]
    item: Item
    why: str = ""  # the evidence or the role of the step (verify / afterwards)


def _step(item: Item, text: str = "", why: str = "") -> Step:
    code = [c for c in item.code if c.strip()][:4]
    return Step(text or item.text, code, item, why)


def plan(
    items: Sequence[Item],
    top: Judged,
    facts: Sequence[Facts],
    lang: str,
    *,
    consequence: bool = False,
) -> list[Step]:
    """The runbook's actions for the supported cause ``top``, as an ordered plan. For a
    ``consequence`` of another alert the fix is upstream: no generic mitigation is guessed."""
    steps: list[Step] = []
    seen: set[int] = set()

    def add(step: Step) -> None:
        if step.item.order not in seen and len(steps) < MAX_STEPS:
            seen.add(step.item.order)
            steps.append(step)

    if top.item.action:
        add(_step(top.item, f"{top.item.text} → {top.item.action}"))
    if top.item.is_action() and top.item.section_kind() in ("mitigate", "fix"):
        add(_step(top.item))
    if top.item.kind in ("para", "bullet") and top.item.section_kind() == "":
        for i in items:  # the cause's own section telling what to do about it
            if i.section == top.item.section and i.is_action() and i.order > top.item.order:
                add(_step(i))
    acting = [i for i in items if i.section_kind() in ("mitigate", "fix") and i.text]
    for i in acting:
        j = judge(i, facts, lang)
        if j.supported:
            add(_step(i, f"{i.text} → {i.action}" if i.action else ""))
    if not steps and not consequence:
        for i in acting[:3]:
            if not judge(i, facts, lang).ruled_out:
                add(_step(i, f"{i.text} → {i.action}" if i.action else ""))
    if steps or consequence:
        for i in [i for i in items if i.section_kind() == "followup" and i.kind == "num"][:4]:
            add(_step(i, why="afterwards"))
        check = next((i for i in items if i.section_kind() == "check" and i.code), None)
        if check:
            lines = [c for c in check.code if c.strip() and not c.lstrip().startswith(("#", "--"))]
            # a command continued over lines (``\``) or after a variable it sets is shown whole
            end = next((n for n, c in enumerate(lines) if not re.search(r"\\$|^\w+=\S*$", c)), 0)
            if lines:
                steps.append(Step(check.where, lines[: end + 1][:4], check, "verify"))
    return steps


def confidence(ranked: Sequence[Judged]) -> str:
    """high / medium / low, from the best score and its lead over the next candidate."""
    if not ranked or not ranked[0].supported:
        return "low"
    lead = ranked[0].score - (ranked[1].score if len(ranked) > 1 else 0)
    if ranked[0].score >= 5 and lead >= 2:
        return "high"
    return "medium" if ranked[0].score >= 3 else "low"
