"""A runbook as items an analysis can reason over: each list item, table row and paragraph with its
section path, the commands under it and, for a table row, its action column. Pure.

The AI-Ops report picks a cause among a runbook's items and the actions for that cause among the
items of its mitigation / fix sections, so both need the runbook's structure, not a flat excerpt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
NUMBERED = re.compile(r"^\s*(\d+)[.)、]\s+(.*)$")
BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
FENCE = re.compile(r"^\s*(```|~~~)")
BOLD = re.compile(r"\*\*([^*]+)\*\*")

# Section kinds, from the heading words runbooks use in either language.
KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("prevent", re.compile(r"预防|prevent|告警阈值|推荐告警|规范|best practice", re.I)),
    ("caution", re.compile(r"注意|误区|pitfall|caveat|don't|do not", re.I)),
    ("followup", re.compile(r"收尾|恢复后|事后|复盘|follow.?up|after recovery|afterwards", re.I)),
    ("mitigate", re.compile(r"止血|紧急|应急|mitigat|emergency|free (up )?space|stop the", re.I)),
    (
        "fix",
        re.compile(
            r"根治|根因修复|修复|解决|处理大|治理|拆分|安全删除|长期优化|\bfix|remediat|resolv",
            re.I,
        ),
    ),
    ("symptom", re.compile(r"^(症状|现象|表现|symptoms?)\b|^(症状|现象)", re.I)),
    ("check", re.compile(r"第一步|step 1\b|确认|判断|看.*分布|read the", re.I)),
)
ACTION_COLUMN = re.compile(r"处理|止血|动作|做法|action|fix|remed|mitigat", re.I)
ACTION_WORDS = re.compile(
    r"调整|调大|调小|减小|提高|降低|关闭|开启|设为|改为|改成|切到|切换|切回|摘除|回滚|重启|扩容|限流|"
    r"删除|清理|杀掉|暂停|停掉|触发|拆分|加索引|\b(run|set|lower|raise|increase|reduce|restart|"
    r"roll back|delete|truncate|force|renew|drain|cordon|kill|disable|enable|remove)\b",
    re.I,
)


@dataclass
class Item:
    """One list item, table row or paragraph of a runbook."""

    section: list[str]  # heading path, outermost first (the title excluded)
    text: str  # the item as written (Markdown inline marks kept)
    kind: str  # num / bullet / row / para / code
    number: int | None = None
    action: str = ""  # a table row's action column
    code: list[str] = field(default_factory=list)
    order: int = 0

    @property
    def heading(self) -> str:
        return self.section[-1] if self.section else ""

    @property
    def where(self) -> str:
        return " > ".join(self.section)

    def section_kind(self) -> str:
        """The kind of the innermost heading that has one; "" for plain sections."""
        for h in reversed(self.section):
            for name, pattern in KINDS:
                if pattern.search(h):
                    return name
        return ""

    @property
    def label(self) -> str:
        """A short name: its bold lead, the part before its colon, or its start."""
        if m := BOLD.search(self.text):
            return m.group(1).strip("：: ")
        head = re.split(r"[：:]", self.text, maxsplit=1)[0]
        text = head if 2 <= len(head) <= 40 else self.text
        if len(text) <= 60:
            return text
        return text[:57].replace("`", "").replace("**", "").rstrip() + "…"  # no mark left open

    def is_action(self) -> bool:
        return self.kind != "row" and bool(ACTION_WORDS.search(self.text))


def _split_paragraph(text: str) -> list[str]:
    """A paragraph that lists things ("Typical causes: a; b; c.") as one item per clause."""
    parts = [
        p.strip() for p in re.split(r"(?<=[;；])\s*|(?<=[.。!])\s+(?=[A-Z\u4e00-\u9fff])", text)
    ]
    return [p for p in parts if len(p) > 3]


def parse(markdown: str) -> list[Item]:
    """The runbook's items in reading order (front matter and the title line skipped)."""
    lines = markdown.splitlines()
    if lines and lines[0].strip() == "---":  # front matter
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), 0)
        lines = lines[end + 1 :]
    items: list[Item] = []
    stack: list[tuple[int, str]] = []
    header: list[str] = []
    in_code = False
    para: list[str] = []

    def section() -> list[str]:
        return [h for level, h in stack if level > 1]

    def add(item: Item) -> None:
        item.order = len(items)
        items.append(item)

    def flush() -> None:
        if para:
            for clause in _split_paragraph(" ".join(para)):
                add(Item(section(), clause, "para"))
            para.clear()

    for raw in lines:
        if FENCE.match(raw):
            flush()
            in_code = not in_code
            if in_code and not (items and items[-1].section == section()):
                add(Item(section(), "", "code"))
            continue
        if in_code:
            if raw.strip() and items:
                items[-1].code.append(raw.rstrip())
            continue
        line = raw.strip()
        if m := HEADING.match(line):
            flush()
            level = len(m.group(1))
            stack = [(lv, h) for lv, h in stack if lv < level] + [(level, m.group(2).strip())]
            header = []
            continue
        if not line:
            flush()
            continue
        if line.startswith("|"):
            flush()
            cells = [c.strip() for c in line.strip("|").split("|")]
            if all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
                continue
            if not header:
                header = cells
                continue
            acts = [c for h, c in zip(header, cells, strict=False) if ACTION_COLUMN.search(h)]
            rest = [c for h, c in zip(header, cells, strict=False) if not ACTION_COLUMN.search(h)]
            add(Item(section(), " | ".join(rest), "row", action=" ".join(acts)))
            continue
        header = []
        if m := NUMBERED.match(line):
            flush()
            add(Item(section(), m.group(2), "num", number=int(m.group(1))))
        elif m := BULLET.match(line):
            flush()
            add(Item(section(), m.group(1), "bullet"))
        elif raw.startswith(("  ", "\t")) and items and items[-1].kind in ("num", "bullet"):
            items[-1].text += " " + line  # a wrapped list item
        else:
            para.append(line)
    flush()
    return [i for i in items if i.text or i.code]
