"""What a chat question asks for: its intent. Pure, no model.

The intent picks which sections of a runbook answer the question (``graph.sections``): "what does
ERR_TIMEOUT mean" wants the meaning, "how do I fix CrashLoopBackOff" the steps and the 止血
section, "what do I do first" the mitigation before the diagnosis. Both languages, colloquial
forms included (咋整, 咋看, 第一步该干嘛).
"""

from __future__ import annotations

import re
from enum import StrEnum


class Intent(StrEnum):
    WHAT_IS = "what_is"
    WHY = "why"
    DIAGNOSE = "diagnose"
    FIX = "fix"
    FIRST_STEP = "first_step"
    GENERAL = "general"  # none of the above: the sections that share most with the question


# Checked in this order: "what do I do first" wins over "how to fix", "why" over "what is".
_PATTERNS: tuple[tuple[Intent, re.Pattern[str]], ...] = (
    (
        Intent.FIRST_STEP,
        re.compile(
            r"先做什么|先干嘛|先做啥|先干啥|第一步|首先|先看什么|先看哪|从哪(?:里|儿)?(?:开始|下手|入手|查起)"
            r"|先重启|要先|该先|\bfirst\b|where (?:do|should) i (?:even )?start|start with",
            re.I,
        ),
    ),
    (
        Intent.WHY,
        re.compile(
            r"为什么|为啥|为何|什么原因|啥原因|原因是|怎么回事|是不是.{0,20}(?:的锅|导致|引起)"
            r"|\bwhy\b|what'?s (?:going on|wrong)|what causes|root cause|caused by",
            re.I,
        ),
    ),
    (
        Intent.DIAGNOSE,
        re.compile(
            r"怎么查|咋查|如何查|排查|定位|怎么看|咋看|如何看|找出|找到|是谁|哪条|哪个线程|诊断"
            r"|how (?:do|can|should) (?:i|we) (?:find|tell|see|check|diagnose|debug|figure)"
            r"|\bdiagnos|\bdebug|find out|who is holding|which (?:thread|query)",
            re.I,
        ),
    ),
    (
        Intent.FIX,
        re.compile(
            r"怎么(?:办|处理|修|解决|恢复|弄|删|救|整|腾)|咋(?:办|整|弄|处理|救)|如何(?:处理|解决|修复|恢复)"
            r"|能不能|可以直接|能否|怎么安全|比较稳|修复|止血|恢复|处理"
            r"|\bfix\b|\bresolve|\brecover|\bmitigat|\bcan i\b|\bshould (?:i|we)\b|\bsafe(?:ly)?\b"
            r"|catch up|what now|what should|get .{0,20} back",
            re.I,
        ),
    ),
    (
        Intent.WHAT_IS,
        re.compile(
            r"什么意思|啥意思|是什么|是啥|含义|意味着|会怎么样|会怎样|定义"
            r"|what (?:does|do|is|are) .{0,80}\bmean|\bmeaning\b|what is\b|what happens",
            re.I,
        ),
    ),
)


def intents(question: str) -> list[Intent]:
    """Every intent the question states, strongest first ("what does it mean, and is it safe to
    retry?" is both what-is and fix); ``[GENERAL]`` when it states none."""
    found = [intent for intent, pattern in _PATTERNS if pattern.search(question)]
    return found or [Intent.GENERAL]


def detect(question: str) -> Intent:
    """The question's main intent; ``GENERAL`` when it says none."""
    return intents(question)[0]


__all__ = ["Intent", "detect", "intents"]
