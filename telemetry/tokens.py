"""A rough token count for text no tokenizer saw: what the offline model reports as usage, and
what prompt budgets (the planner's knowledge map, the answer call's findings) are measured in."""

from __future__ import annotations

import re

_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_WORD = re.compile(r"[A-Za-z0-9_]+")
_OTHER = re.compile(r"[^\sA-Za-z0-9_\u3400-\u4dbf\u4e00-\u9fff]")


def estimate_tokens(text: str) -> int:
    """1 per CJK char, ~1.3 per English word, one per two other symbols."""
    cjk = len(_CJK_CHAR.findall(text))
    return cjk + int(len(_WORD.findall(text)) * 1.3) + len(_OTHER.findall(text)) // 2
