"""One L1 search of a lookup: what each route reads, both routes asked, each step timed.

L1 down is an error message for the record, not an exception: L0 still answers (``service.py``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from retrieval.parsing.terms import query_terms

log = logging.getLogger(__name__)


def bm25_keywords(expanded: str, catalog: Any) -> str:  # noqa: ANN401 - a DocumentCatalog
    """What BM25 reads of a query (identifiers already spelled out): its content words, since
    question words and particles would give every runbook with "怎么" or "how" a score, plus the
    base's own forms of a word no document holds (``word_forms.py``)."""
    words = query_terms(expanded)
    return " ".join(words + catalog.word_forms(words)) or expanded


@dataclass
class RouteResults:
    routes: dict[str, Any] = field(default_factory=dict)  # route → its hits (``store.search``)
    error: str | None = None  # why L1 gave nothing, for the lookup's record
    timings: dict[str, float] = field(default_factory=dict)  # ``embed`` and ``l1``, in ms


def search_routes(
    store: Any,  # noqa: ANN401 - a ChunkStore
    *,
    keywords: str,
    dense_text: str,
    candidates: int,
    dense: bool,
    exclude: frozenset[str],
    base_size: int,
) -> RouteResults:
    """Both routes of ``store`` for one query (the dense one embedded from ``dense_text``, asked
    only when ``dense``), without the ``exclude`` documents; ``base_size`` documents in the
    catalog (a missing collection is an error only when the base has some)."""
    out = RouteResults()
    try:
        t = time.perf_counter()
        vector = store.embeddings.embed_query(dense_text)
        out.timings["embed"] = round((time.perf_counter() - t) * 1000, 2)
        t = time.perf_counter()
        result = store.search(keywords, vector, candidates=candidates, dense=dense, exclude=exclude)
        out.timings["l1"] = round((time.perf_counter() - t) * 1000, 2)
        out.routes = result.routes()
        if result.missing and base_size:
            out.error = "L1 unavailable: the vector collection is missing"
    except Exception as exc:  # L1 down must not take L0 with it
        log.warning("L1 search failed, answering from L0 only: %s", exc)
        out.error = f"L1 unavailable: {exc}"[:500]
    return out
