"""L0: exact keyword / title / file-name match, case-insensitive, ranked. Pure (no I/O).

Every term (frontmatter keywords, the title and its bracketed parts, the file stem) is stored in its
compact form (see ``textnorm.compact``: case, spaces, hyphens and underscores ignored), and all of
them go into one Aho–Corasick automaton (pyahocorasick). A query is compacted the same way and
matched in time proportional to its own length plus the matches — not to the number of documents.

A term that starts or ends with a letter or digit must sit on a word boundary *in the original
query* (``ERR_TIMEOUT`` does not match inside ``ERR_TIMEOUTS``, ``redis`` not inside
``predisposed``); CJK terms match anywhere, since Chinese has no spaces.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import ahocorasick

from retrieval.parsing.textnorm import compact, compact_term, is_word_char

MIN_TERM_CHARS = 2
# Title parts: "支付网关错误码手册 (Payment Gateway Error Codes)" → both halves are title terms.
_TITLE_SPLIT = re.compile(r"[()（）\[\]【】:：|/—–]+|\s+-\s+")
# File stems that name no subject; as L0 terms they would match half the questions.
GENERIC_STEMS = frozenset(
    {"readme", "index", "overview", "intro", "introduction", "faq", "notes", "untitled", "doc"}
)


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
    title_hit: bool = False  # the title, a title part or the file stem
    longest: int = 0
    names: list[str] = field(default_factory=list)  # the name terms (title, part, stem) matched

    @property
    def terms(self) -> list[str]:
        return [*self.keywords, *self.names]

    @property
    def score(self) -> int:
        return len(self.keywords) + (1 if self.title_hit else 0)


def title_terms(title: str) -> set[str]:
    terms = {compact_term(title)}
    terms.update(compact_term(p) for p in _TITLE_SPLIT.split(title))
    return {t for t in terms if len(t) >= MIN_TERM_CHARS}


def stem_term(file_path: str) -> str | None:
    stem = PurePosixPath(file_path).stem
    term = compact_term(stem)
    if len(term) < MIN_TERM_CHARS or term in GENERIC_STEMS or term.isdigit():
        return None
    return term


def name_terms(entry: L0Entry) -> set[str]:
    """Terms that name the document: its title, title parts and file stem."""
    terms = title_terms(entry.title)
    if stem := stem_term(entry.file_path):
        terms.add(stem)
    return terms


def keyword_terms(entry: L0Entry) -> set[str]:
    return {t for t in (compact_term(k) for k in entry.keywords) if len(t) >= MIN_TERM_CHARS}


class L0Index:
    """Thread-safe: writers rebuild under a lock; readers use the last built automaton."""

    def __init__(self, entries: Iterable[L0Entry] = ()) -> None:
        self._lock = threading.Lock()
        self._docs: dict[str, L0Entry] = {}
        # term → {doc_id: is_name_term}
        self._terms: dict[str, dict[str, bool]] = {}
        self._automaton: ahocorasick.Automaton | None = None
        self._dirty = False
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
        for term in keyword_terms(entry):
            self._terms.setdefault(term, {}).setdefault(entry.doc_id, False)
        for term in name_terms(entry):
            self._terms.setdefault(term, {})[entry.doc_id] = True

    def _remove(self, doc_id: str) -> None:
        old = self._docs.pop(doc_id, None)
        if old is None:
            return
        for term in keyword_terms(old) | name_terms(old):
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
                        edges = (is_word_char(term[0]), is_word_char(term[-1]))
                        auto.add_word(term, (term, entries, len(term), *edges))
                    if len(auto):
                        auto.make_automaton()
                    self._automaton = auto if len(auto) else None
                    self._dirty = False
        return self._automaton

    def search(self, query: str, limit: int | None = None) -> list[L0Match]:
        """Documents whose keywords, title or file name occur in the query, best first."""
        auto = self._automaton if not self._dirty else self._built()
        if auto is None:
            return []
        text, where = compact(query)
        if not text:
            return []
        last = len(query) - 1
        found: dict[str, list] = {}  # doc_id → [entry, keywords, names, longest]; cheap lists
        for end, (term, entries, n, check_start, check_end) in auto.iter(text):
            # Letters or digits at a term's edges must not continue into the original query.
            start = where[end - n + 1]
            if check_start and start > 0 and is_word_char(query[start - 1]):
                continue
            stop = where[end]
            if check_end and stop < last and is_word_char(query[stop + 1]):
                continue
            for entry, is_name in entries:
                acc = found.get(entry.doc_id)
                if acc is None:
                    acc = found[entry.doc_id] = [entry, [], [], 0]
                bucket = acc[2] if is_name else acc[1]
                if term not in bucket:
                    bucket.append(term)
                if n > acc[3]:
                    acc[3] = n
        accs = list(found.values())
        if len(accs) > 1:  # rank on the raw lists: cheaper than via L0Match.score
            accs.sort(key=lambda a: (-len(a[1]) - bool(a[2]), -a[3], a[0].title))
        if limit:
            accs = accs[:limit]
        return [L0Match(e, kws, bool(names), longest, names) for e, kws, names, longest in accs]


def naive_search(entries: Iterable[L0Entry], query: str) -> list[str]:
    """Scan every document's keywords per query: the baseline ``bench/bench_l0.py`` compares with."""
    q = query.casefold()
    return [e.doc_id for e in entries if any(k.casefold() in q for k in e.keywords)]
