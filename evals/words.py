"""Finding what an answer says, by meaning more than by form. Pure.

Text is compared normalised (NFKC, lower case, Markdown marks and the spaces around Chinese dropped),
so ``**慢 SQL**`` is ``慢sql`` and full-width letters are plain ones. A concept counts when any of its
words appears; a word also brings its synonyms from ``synonyms.yaml`` (Chinese and English). Latin
words match whole (``leak`` is not found inside ``leakDetectionThreshold``), Chinese ones anywhere.
A forbidden claim does not count where it is negated (``不要 KEYS *``, ``do not restart``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

SYNONYMS_FILE = Path(__file__).resolve().parent / "synonyms.yaml"
_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\u3000-\u303f\uff00-\uffef"
_SPACE_NEAR_CJK = re.compile(rf"(?<=[{_CJK}])\s+|\s+(?=[{_CJK}])")
_MARKS = re.compile(r"\*\*|`|__")
_WORDISH = re.compile(r"[a-z0-9]")
# Where a negation stops reaching: the end of a clause.
_CLAUSE_END = re.compile(r"[。；;！!？?\n，,：:]|\.\s")
NEGATIONS = re.compile(
    r"不要|不能|不可|不必|不用|无需|不需要|不应|别|勿|避免|禁止|并非|不是|而不是|排除|与.{0,6}无关"
    r"|\bnot\b|\bno\b|\bnever\b|n't\b|\bavoid\b|\binstead of\b|\brather than\b|\bwithout\b"
    r"|\brule[sd]? out\b|\bunrelated\b|\bunlike\b"
)
NEGATION_REACH = 24  # characters before a phrase that a negation may stand in
# How an answer says that the knowledge base has nothing for the question.
NOT_FOUND = [
    "未找到",
    "没有找到",
    "没找到",
    "找不到",
    "未检索到",
    "没有检索到",
    "没有相关",
    "没有匹配",
    "没有对应",
    "未收录",
    "暂无",
    "not found",
    "no runbook",
    "no matching",
    "nothing in the knowledge base",
    "could not find",
    "couldn't find",
    "did not find",
    "didn't find",
    "does not cover",
    "doesn't cover",
    "does not have",
    "doesn't have",
]


def normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text or "").lower()
    text = _MARKS.sub("", text)
    text = re.sub(r"\s+", " ", text)
    return _SPACE_NEAR_CJK.sub("", text).strip()


def _pattern(word: str) -> re.Pattern[str]:
    w = normalize(word)
    left = r"(?<![a-z0-9])" if _WORDISH.match(w[:1]) else ""
    right = r"(?![a-z0-9])" if _WORDISH.match(w[-1:]) else ""
    return re.compile(left + re.escape(w) + right)


def positions(text_norm: str, word: str) -> list[int]:
    """Where ``word`` starts in normalised text (whole-word for Latin edges)."""
    if not normalize(word):
        return []
    return [m.start() for m in _pattern(word).finditer(text_norm)]


def negated(text_norm: str, at: int) -> bool:
    """Whether the phrase at ``at`` stands in a negation within its clause."""
    before = text_norm[max(0, at - NEGATION_REACH) : at]
    ends = list(_CLAUSE_END.finditer(before))
    if ends:
        before = before[ends[-1].end() :]
    return bool(NEGATIONS.search(before))


@dataclass(frozen=True)
class Synonyms:
    """Groups of words that mean the same; a word outside every group stands alone."""

    groups: tuple[frozenset[str], ...] = ()
    _index: dict[str, frozenset[str]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for g in self.groups:
            for w in g:
                self._index[w] = self._index.get(w, frozenset()) | g

    @classmethod
    def from_lists(cls, lists: Iterable[Sequence[str]]) -> Synonyms:
        return cls(tuple(frozenset(normalize(w) for w in words if normalize(w)) for words in lists))

    def expand(self, words: Iterable[str]) -> list[str]:
        out: list[str] = []
        for w in words:
            for x in [normalize(w), *sorted(self._index.get(normalize(w), ()))]:
                if x and x not in out:
                    out.append(x)
        return out


@lru_cache(maxsize=1)
def shipped_synonyms() -> Synonyms:
    data = yaml.safe_load(SYNONYMS_FILE.read_text(encoding="utf-8")) or []
    return Synonyms.from_lists(data)


def concept_words(concept: str | Sequence[str], synonyms: Synonyms) -> list[str]:
    return synonyms.expand([concept] if isinstance(concept, str) else concept)


def names(text: str, concept: str | Sequence[str], synonyms: Synonyms) -> bool:
    """Whether the text names the concept (any of its words or their synonyms)."""
    t = normalize(text)
    return any(positions(t, w) for w in concept_words(concept, synonyms))


def claims(text: str, phrase: str, synonyms: Synonyms | None = None) -> list[str]:
    """The clauses in which the text makes ``phrase`` (or a synonym) without negating it."""
    t = normalize(text)
    words = synonyms.expand([phrase]) if synonyms else [normalize(phrase)]
    out = []
    for w in words:
        for at in positions(t, w):
            if not negated(t, at):
                out.append(t[max(0, at - 20) : at + len(w) + 20])
    return out


def says_not_found(text: str) -> bool:
    t = normalize(text)
    return any(normalize(p) in t for p in NOT_FOUND)


_PATH = re.compile(r"(?<![\w./-])([A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)+\.md)(?![\w/-])")


def cited_paths(text: str) -> list[str]:
    """Knowledge-base paths the text cites (``dir/name.md``), in order, once each."""
    return list(dict.fromkeys(m.group(1) for m in _PATH.finditer(text or "")))


def title_parts(title: str) -> list[str]:
    """A title and its halves: "Redis 内存满处理 (Redis Memory Full)" is cited by either name."""
    parts = [title]
    if m := re.match(r"^(.*?)\s*[（(]([^()（）]+)[)）]\s*$", title):
        parts += [m.group(1), m.group(2)]
    return [p for p in (normalize(x) for x in parts) if len(p) >= 6]


def cited_documents(text: str, titles: dict[str, str]) -> list[str]:
    """The documents of ``titles`` (path → title) the text cites by path or by title."""
    t = normalize(text)
    by_path = set(cited_paths(text))
    return [
        path
        for path, title in titles.items()
        if path in by_path or any(part in t for part in title_parts(title))
    ]
