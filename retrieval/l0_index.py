"""L0: exact keyword/title match, case-insensitive, ranked. Pure (no I/O).

All keywords and titles of all documents go into one Aho–Corasick automaton (pyahocorasick), so a
query is matched in time proportional to its own length plus the matches — not to the number of
documents, which the seed's per-document scan was. ASCII terms must sit on word boundaries
(``ERR_TIMEOUT`` does not match inside ``ERR_TIMEOUTS``); CJK terms match anywhere, since Chinese has
no spaces.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

import ahocorasick

MIN_TERM_CHARS = 2
WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
# Title parts: "支付网关错误码手册 (Payment Gateway Error Codes)" → both halves are title terms.
_TITLE_SPLIT = re.compile(r"[()（）\[\]【】:：|/—–]+|\s+-\s+")


@dataclass(frozen=True)
class L0Entry:
    doc_id: str
    file_path: str
    title: str
    category: str
    keywords: tuple[str, ...] = ()


@dataclass(slots=True)
class L0Match:
    entry: L0Entry
    keywords: list[str] = field(default_factory=list)
    title_hit: bool = False
    longest: int = 0

    @property
    def score(self) -> int:
        return len(self.keywords) + (1 if self.title_hit else 0)


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def title_terms(title: str) -> set[str]:
    terms = {_norm(title)}
    terms.update(_norm(p) for p in _TITLE_SPLIT.split(title))
    return {t for t in terms if len(t) >= MIN_TERM_CHARS}


class L0Index:
    """Thread-safe: writers rebuild under a lock; readers use the last built automaton."""

    def __init__(self, entries: Iterable[L0Entry] = ()) -> None:
        self._lock = threading.Lock()
        self._docs: dict[str, L0Entry] = {}
        # term → {doc_id: is_title_term}
        self._terms: dict[str, dict[str, bool]] = {}
        self._automaton: ahocorasick.Automaton | None = None
        self._dirty = False
        self.version = 0  # knowledge version this index reflects (set by the loader)
        self.replace_all(entries)

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, doc_id: str) -> bool:
        return doc_id in self._docs

    def entries(self) -> list[L0Entry]:
        return list(self._docs.values())

    def _add(self, entry: L0Entry) -> None:
        self._remove(entry.doc_id)
        self._docs[entry.doc_id] = entry
        for kw in entry.keywords:
            term = _norm(kw)
            if len(term) >= MIN_TERM_CHARS:
                self._terms.setdefault(term, {}).setdefault(entry.doc_id, False)
        for term in title_terms(entry.title):
            self._terms.setdefault(term, {})[entry.doc_id] = True

    def _remove(self, doc_id: str) -> None:
        old = self._docs.pop(doc_id, None)
        if old is None:
            return
        for term in [_norm(k) for k in old.keywords] + list(title_terms(old.title)):
            owners = self._terms.get(term)
            if owners is not None:
                owners.pop(doc_id, None)
                if not owners:
                    del self._terms[term]

    def add(self, entry: L0Entry) -> None:
        with self._lock:
            self._add(entry)
            self._dirty = True

    def remove(self, doc_id: str) -> None:
        with self._lock:
            self._remove(doc_id)
            self._dirty = True

    def replace_all(self, entries: Iterable[L0Entry]) -> None:
        with self._lock:
            self._docs, self._terms = {}, {}
            for e in entries:
                self._add(e)
            self._dirty = True

    def _built(self) -> ahocorasick.Automaton | None:
        # Per-hit work is moved to build time: each automaton value carries the term, its owners
        # (a snapshot, so a concurrent writer never changes what a reader iterates) and whether its
        # edges need a word-boundary check.
        if self._dirty:
            with self._lock:
                if self._dirty:
                    auto = ahocorasick.Automaton()
                    for term, owners in self._terms.items():
                        entries = tuple(
                            (self._docs[d], t) for d, t in owners.items() if d in self._docs
                        )
                        auto.add_word(
                            term,
                            (
                                term,
                                entries,
                                len(term),
                                term[0] in WORD_CHARS,
                                term[-1] in WORD_CHARS,
                            ),
                        )
                    if len(auto):
                        auto.make_automaton()
                    self._automaton = auto if len(auto) else None
                    self._dirty = False
        return self._automaton

    def search(self, query: str, limit: int | None = None) -> list[L0Match]:
        """Documents whose keywords or title occur in the query, best first."""
        auto = self._automaton if not self._dirty else self._built()
        text = " ".join(query.casefold().split())  # _norm, inlined: this is the hot path
        if auto is None or not text:
            return []
        last = len(text) - 1
        found: dict[str, list] = {}  # doc_id → [entry, keywords, title_hit, longest]; cheap lists
        for end, (term, entries, n, check_start, check_end) in auto.iter(text):
            start = end - n + 1
            # ASCII word characters at a term's edges must not continue into the query.
            if check_start and start > 0 and text[start - 1] in WORD_CHARS:
                continue
            if check_end and end < last and text[end + 1] in WORD_CHARS:
                continue
            for entry, is_title in entries:
                acc = found.get(entry.doc_id)
                if acc is None:
                    acc = found[entry.doc_id] = [entry, [], False, 0]
                if is_title:
                    acc[2] = True
                elif term not in acc[1]:
                    acc[1].append(term)
                if n > acc[3]:
                    acc[3] = n
        accs = list(found.values())
        if len(accs) > 1:  # rank on the raw lists: cheaper than via L0Match.score
            accs.sort(key=lambda a: (-len(a[1]) - a[2], -a[3], a[0].title))
        if limit:
            accs = accs[:limit]
        ranked = [L0Match(e, kws, title, longest) for e, kws, title, longest in accs]
        return ranked


def naive_search(entries: Iterable[L0Entry], query: str) -> list[str]:
    """The seed's method — scan every document's keywords per query. Kept for the benchmark only."""
    q = query.casefold()
    return [e.doc_id for e in entries if any(k.casefold() in q for k in e.keywords)]
