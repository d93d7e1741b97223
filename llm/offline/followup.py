"""Follow-up questions for the offline model: a question that points back ("它", "that") gets the
subject of the conversation's earlier questions, so the lookup searches for what the user means.
Pure.

``那收到它之后可以直接重试吗？`` after ``ERR_TIMEOUT 是什么意思`` becomes
``ERR_TIMEOUT 那收到它之后可以直接重试吗？``. A question that names its own subject is left as it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import AnyMessage

from llm.offline.text import terms

# Pronouns and phrases that point back to something said earlier. Single 这/那/其/此 are left out:
# they mostly mean "then" or sit inside other words (其他, 因此).
REFERS_BACK = re.compile(
    r"它们?|这个|那个|这种|那种|这类|该错误|该问题|上述|上面|前面|刚才"
    r"|\b(?:it|its|that|this|these|those|them|they)\b"
    # A question that opens as a continuation ("那怎么找到…", "so can we…") goes on the last topic.
    r"|^\s*(?:那|那么|那要|所以|然后呢|(?:and|so|ok so|okay so|then)\b)",
    re.I,
)
SUBJECT_TERMS = 4  # at most this many earlier terms are carried over


def refers_back(question: str) -> bool:
    return bool(REFERS_BACK.search(question))


def _codes(ts: list[str]) -> list[str]:
    """Error codes and identifiers (ERR_TIMEOUT, HikariCP, OOM, 502) among the terms."""
    return [
        t
        for t in ts
        if t.isascii()
        and (t.isupper() or "_" in t or any(c.isdigit() or c.isupper() for c in t[1:]))
    ]


def _subject(question: str) -> list[str]:
    """What an earlier question was about: its codes/identifiers, else its first content words."""
    ts = terms(question)
    codes = _codes(ts)
    return [*codes, *[t for t in ts if t not in codes]][:SUBJECT_TERMS]


def with_subject(question: str, earlier: Sequence[str]) -> str:
    """``question`` with the subject of the latest earlier question that has one, when it refers
    back and does not already carry that subject."""
    own_terms = terms(question)
    if not refers_back(question) or _codes(own_terms):
        return question  # no pointer back, or it names its own subject
    own = {t.lower() for t in own_terms}
    for prev in reversed(earlier):
        subject = [t for t in _subject(prev) if t.lower() not in own]
        if subject:
            return f"{' '.join(subject)} {question}"
    return question


def earlier_questions(messages: Sequence[AnyMessage]) -> list[str]:
    """The text of every human message before the last one, oldest first."""
    humans = [m.content for m in messages if m.type == "human" and isinstance(m.content, str)]
    return humans[:-1]
