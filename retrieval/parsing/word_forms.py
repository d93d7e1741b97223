"""English word forms the knowledge base uses: a query's ``reload`` also asks for ``reloads``. Pure.

Milvus Lite's BM25 analyzer (jieba) does not stem: a stemmer filter in its analyzer params is
accepted and ignored (tried: ``reload`` still scored nothing on ``reloads``). So a question saying
"consumer group rebalanced" gave BM25 nothing on ``KafkaConsumerGroupRebalancing``'s runbook,
which says "rebalancing". The base's own vocabulary supplies the forms: a query term brings every
term of the base with the same Snowball stem. Only forms that some document holds are added, so
the BM25 query grows by a few words and never by guesses.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache

import snowballstemmer

MIN_LENGTH = 4  # shorter words (``pod``, ``oom``, ``dns``) are names, not inflected words


_STEMMER = snowballstemmer.stemmer("english")
_LOCK = threading.Lock()  # a stemmer keeps its word in itself while it works


@lru_cache(maxsize=65536)
def stem(term: str) -> str | None:
    """The Snowball English stem of a lower-case Latin word, ``None`` for anything else."""
    if len(term) < MIN_LENGTH or not term.isascii() or not term.isalpha():
        return None
    with _LOCK:
        return _STEMMER.stemWord(term)


class WordForms:
    """Terms of a vocabulary grouped by stem; kept up to date term by term as documents come and
    go (``add`` / ``discard``), so a change to the base never re-stems the whole vocabulary."""

    def __init__(self, vocabulary: Iterable[str] = ()) -> None:
        self._groups: dict[str, set[str]] = defaultdict(set)
        for term in vocabulary:
            self.add(term)

    def add(self, term: str) -> None:
        if (s := stem(term)) is not None:
            self._groups[s].add(term)

    def discard(self, term: str) -> None:
        s = stem(term)
        group = self._groups.get(s) if s is not None else None
        if group is not None:
            group.discard(term)
            if not group:
                del self._groups[s]  # type: ignore[arg-type]

    def forms(self, terms: Iterable[str]) -> list[str]:
        """The vocabulary's other forms of ``terms``, in order, none of ``terms`` itself."""
        given = list(terms)
        have = set(given)
        out: list[str] = []
        for term in given:
            s = stem(term)
            group = self._groups.get(s, set()) if s is not None else set()
            if term in group:  # the base says it this way too: its other forms would count twice
                continue
            for form in sorted(group - have):
                have.add(form)
                out.append(form)
        return out
