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
    """Terms of a vocabulary grouped by stem."""

    def __init__(self, vocabulary: Iterable[str]) -> None:
        groups: dict[str, set[str]] = defaultdict(set)
        for term in vocabulary:
            if (s := stem(term)) is not None:
                groups[s].add(term)
        self._groups = {s: tuple(sorted(ts)) for s, ts in groups.items()}

    def forms(self, terms: Iterable[str]) -> list[str]:
        """The vocabulary's other forms of ``terms``, in order, none of ``terms`` itself."""
        given = list(terms)
        have = set(given)
        out: list[str] = []
        for term in given:
            s = stem(term)
            group = self._groups.get(s, ()) if s is not None else ()
            if term in group:  # the base says it this way too: its other forms would count twice
                continue
            for form in group:
                if form not in have:
                    have.add(form)
                    out.append(form)
        return out
