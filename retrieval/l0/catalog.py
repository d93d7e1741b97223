"""In-memory catalog of indexed documents: the L0 index plus what a lookup shows about a document.

Built from ``api_document`` rows at start and kept in step by ingestion (and, across workers, by the
knowledge version). Pure apart from the lock; no I/O.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

from retrieval.l0.l0_index import L0Entry, L0Index
from retrieval.parsing.chunking import split_sections
from retrieval.parsing.documents import section_titles
from retrieval.parsing.terms import query_terms
from retrieval.parsing.textmatch import bigrams, overlap
from retrieval.parsing.textnorm import compound_identifiers, expand_identifiers, split_identifier
from retrieval.parsing.word_forms import WordForms

# A single word in more documents than this is a topic, not a name (see is_specific).
GENERIC_MIN_DOCS, GENERIC_SHARE = 5, 0.05
SHORT_DOC_CHARS = 3000
SNIPPET_SHORT, SNIPPET_LONG = 800, 500


# one or two digits: a three-digit lead is an HTTP status (``502-bad-gateway``), not an ordinal
_ORDINAL = re.compile(r"^\s*\d{1,2}(?:[._-]\d{1,2})*[._\-\s]+(?=\S)")


@lru_cache(maxsize=4096)
def _title_terms(title: str, stem: str) -> frozenset[str]:
    """An alert name (``EtcdNoLeader``) counts as its words: as one token it is unsaid by every
    question that does not paste the name, for the right runbook and its sibling alike."""
    # a leading ordinal (``05-pod-pending``, ``1. etcd``) orders a collection, it names nothing
    text = f"{_ORDINAL.sub('', title)} {_ORDINAL.sub('', stem)}"
    compounds = {w.casefold() for w in compound_identifiers(text)}
    return frozenset(t for t in query_terms(expand_identifiers(text)) if t not in compounds)


@dataclass(frozen=True)
class DocInfo:
    doc_id: str
    file_path: str
    title: str
    category: str
    summary: str = ""
    keywords: tuple[str, ...] = ()
    covers: tuple[str, ...] = ()
    when_to_retrieve: str = ""
    compact: str = ""  # the compact summary a PRECISE lookup returns
    terms: frozenset[str] = frozenset()  # distinct content terms (for term rarity and coverage)
    # its identifiers, compacted (``document_codes``); None: imported before they were recorded
    codes: frozenset[str] | None = None

    @property
    def title_terms(self) -> frozenset[str]:
        """The content terms of the title and the file name (the judge's ``title_unmatched``)."""
        return _title_terms(self.title, PurePosixPath(self.file_path).stem)

    @property
    def name_text(self) -> str:
        """What names the document: title, file name (identifiers spelled out), keywords, summary."""
        stem = PurePosixPath(self.file_path).stem
        words = " ".join(split_identifier(stem))
        return " ".join([self.title, stem, words, *self.keywords, self.summary])

    def l0_entry(self) -> L0Entry:
        return L0Entry(self.doc_id, self.file_path, self.title, self.category, self.keywords)

    @classmethod
    def from_row(
        cls, doc_id: str, file_path: str, title: str, category: str, meta: dict[str, Any] | None
    ) -> DocInfo:
        meta = meta or {}
        return cls(
            doc_id=doc_id,
            file_path=file_path,
            title=title,
            category=category,
            summary=meta.get("summary", ""),
            keywords=tuple(meta.get("keywords") or ()),
            covers=tuple(meta.get("covers") or ()),
            when_to_retrieve=meta.get("when_to_retrieve", ""),
            compact=meta.get("compact", ""),
            terms=frozenset(meta.get("terms") or ()),
            codes=None if meta.get("codes") is None else frozenset(meta["codes"]),
        )


def _plain(text: str) -> str:
    """Snippet text: headings become plain lines, runs of blank lines collapse."""
    text = re.sub(r"^#{1,6}\s+", "", text, flags=re.M)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def compact_summary(title: str, summary: str, body: str, query: str = "") -> str:
    """Title, summary, section list and a body snippet (800 chars for short docs, 500 for long).

    With a query, the snippet starts at the section that matches it best, so a PRECISE hit on a
    long runbook shows the part that was asked about; without one, at the start of the body.
    """
    limit = SNIPPET_SHORT if len(body) <= SHORT_DOC_CHARS else SNIPPET_LONG
    sections = split_sections(body)
    start = 0
    if query and sections:
        q = bigrams(query)
        scores = [
            2 * overlap(" ".join(sec.headings[1:]), q) + overlap(sec.text, q) for sec in sections
        ]
        if max(scores) > 0:
            start = scores.index(max(scores))
    picked = sections[start:] if sections else []
    where = " > ".join(picked[0].headings[1:]) if picked and start else ""
    text = _plain("\n\n".join(sec.text for sec in picked)) if picked else _plain(body)
    snippet = text if len(text) <= limit else text[:limit].rstrip() + "…"
    lines = [f"《{title}》", f"摘要：{summary}"]
    if heads := section_titles(body):
        lines.append("章节：" + " / ".join(heads))
    lines += [f"正文节选（{where}）：" if where else "正文节选：", snippet]
    return "\n".join(lines)


def _uncount(df: Counter[str], terms: Iterable[str]) -> None:
    """``df.subtract(terms)`` without the zeros it keeps: a deleted document's terms (and
    identifiers) must not stay as keys (after ``bench/bench_memory.py``'s deletes 17,000 did, with
    their strings)."""
    for term in terms:
        if (n := df[term] - 1) > 0:
            df[term] = n
        else:
            df.pop(term, None)


@dataclass
class DocumentCatalog:
    l0: L0Index = field(default_factory=L0Index)
    _docs: dict[str, DocInfo] = field(default_factory=dict)
    _by_path: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _df: Counter[str] = field(default_factory=Counter)  # term → documents containing it
    _codes: Counter[str] = field(default_factory=Counter)  # identifier → documents holding it
    _uncoded: int = 0  # documents imported before their identifiers were recorded
    _forms: WordForms | None = None  # the vocabulary by stem: built when first asked, then kept
    version: int = 0  # knowledge version this catalog reflects
    # Indexed but disabled documents: kept out of the catalog (so out of L0), and their vectors are
    # filtered out of L1 searches by doc_id.
    disabled: frozenset[str] = frozenset()

    def replace_all(
        self, docs: Iterable[DocInfo], version: int = 0, disabled: Iterable[str] = ()
    ) -> None:
        docs = list(docs)
        self.disabled = frozenset(disabled)
        df: Counter[str] = Counter()
        codes: Counter[str] = Counter()
        for d in docs:
            df.update(d.terms)
            codes.update(d.codes or ())
        with self._lock:
            self._docs = {d.doc_id: d for d in docs}
            self._by_path = {d.file_path: d.doc_id for d in docs}
            self._df = df
            self._codes = codes
            self._uncoded = sum(1 for d in docs if d.codes is None)
            self._forms = None
            self.version = version
        self.l0.replace_all(d.l0_entry() for d in docs)

    def put(self, doc: DocInfo) -> None:
        with self._lock:
            self.disabled = self.disabled - {doc.doc_id}
            old = self._docs.get(doc.doc_id)
            if old is not None:
                self._by_path.pop(old.file_path, None)
                self._count(old, -1)
            self._docs[doc.doc_id] = doc
            self._by_path[doc.file_path] = doc.doc_id
            self._count(doc, 1)
        self.l0.add(doc.l0_entry())

    def disable(self, doc_id: str) -> None:
        """Out of every lookup; its vectors stay (enabling it again needs no re-embedding)."""
        self.remove(doc_id)
        with self._lock:
            self.disabled = self.disabled | {doc_id}

    def remove(self, doc_id: str) -> None:
        with self._lock:
            self.disabled = self.disabled - {doc_id}
            old = self._docs.pop(doc_id, None)
            if old is not None:
                self._by_path.pop(old.file_path, None)
                self._count(old, -1)
        self.l0.remove(doc_id)

    def _count(self, doc: DocInfo, sign: int) -> None:
        """Adds (1) or takes away (-1) a document's terms and identifiers; under the lock."""
        # the word forms learn only the terms entering or leaving the vocabulary
        forms = self._forms
        if sign > 0:
            if forms is not None:
                for term in doc.terms:
                    if self._df.get(term, 0) <= 0:
                        forms.add(term)
            self._df.update(doc.terms)
            self._codes.update(doc.codes or ())
        else:
            _uncount(self._df, doc.terms)
            _uncount(self._codes, doc.codes or ())
            if forms is not None:
                for term in doc.terms:
                    if self._df.get(term, 0) <= 0:
                        forms.discard(term)
        if doc.codes is None:
            self._uncoded += sign

    def idf(self, term: str) -> float:
        """Rarity of a term across the knowledge base; a term no document holds is the rarest."""
        return math.log((len(self._docs) + 1) / (max(self._df.get(term, 0), 0) + 0.5))

    def word_forms(self, terms: list[str]) -> list[str]:
        """Other forms of ``terms`` that documents of the base use (``reloads`` for ``reload``)."""
        with self._lock:  # imports change the groups under the same lock
            if self._forms is None:
                self._forms = WordForms(self._df)
            return self._forms.forms(terms)

    def document_frequency(self, term: str) -> int:
        return max(self._df.get(term, 0), 0)

    def holds_code(self, code: str) -> bool:
        """Does any document hold the identifier (compacted, ``compact_term``)? Yes while some
        document's identifiers were never recorded (imported by an older version): unknown."""
        return self._uncoded > 0 or self._codes.get(code, 0) > 0

    def is_specific(self, term: str) -> bool:
        """Does an L0 term name one document, or only a topic many documents share?

        A phrase or an identifier (``连接池超时``, ``ERR_TIMEOUT``, ``ClusterOperatorDown``) names
        one; a single word that many documents contain (``Redis`` in a knowledge base with ten
        Redis runbooks) names a topic, and a keyword match on it must not claim PRECISE.
        """
        words = query_terms(term)
        if len(words) != 1:
            return True
        return self.document_frequency(words[0]) <= max(GENERIC_MIN_DOCS, GENERIC_SHARE * len(self))

    def get(self, doc_id: str) -> DocInfo | None:
        return self._docs.get(doc_id)

    def by_path(self, file_path: str) -> DocInfo | None:
        doc_id = self._by_path.get(file_path)
        return self._docs.get(doc_id) if doc_id else None

    def all(self) -> list[DocInfo]:
        return list(self._docs.values())

    def paths_in(self, category: str) -> set[str]:
        return {d.file_path for d in list(self._docs.values()) if d.category == category}

    def categories(self) -> dict[str, list[DocInfo]]:
        out: dict[str, list[DocInfo]] = {}
        for d in sorted(self._docs.values(), key=lambda d: d.file_path):
            out.setdefault(d.category, []).append(d)
        return out

    def __len__(self) -> int:
        return len(self._docs)
