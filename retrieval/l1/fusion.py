"""Weighted reciprocal-rank fusion of the retrieval routes, by chunk and by document. Pure.

Each route (dense, BM25) returns chunks. ``fuse_documents`` ranks *documents*: a document's rank in a
route is the rank of its best chunk among the distinct documents that route returned, so a runbook
that fills five of the top chunks counts once and the next runbook is really second. Routes that rank
documents directly (L0 keyword matches) join the same fusion. Every document keeps its chunks (best
first) and each route's own rank and raw score, which the relevance judge reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DENSE_ROUTE, BM25_ROUTE, L0_ROUTE = "dense", "bm25", "l0"
PATH = "file_path"


@dataclass
class RouteHit:
    pk: str
    # dense: squared L2 distance (lower is better); bm25: BM25 score (higher is better)
    score: float
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class FusedHit:
    """One chunk after fusion."""

    pk: str
    rrf: float
    fields: dict[str, Any]
    ranks: dict[str, int] = field(default_factory=dict)  # route → 1-based rank
    scores: dict[str, float] = field(default_factory=dict)  # route → that route's raw score


@dataclass
class DocHit:
    """One document after fusion: its chunks and how each route ranked it."""

    path: str
    rrf: float = 0.0
    chunks: list[FusedHit] = field(default_factory=list)  # best first
    ranks: dict[str, int] = field(default_factory=dict)  # route → 1-based rank among documents
    scores: dict[str, float] = field(default_factory=dict)  # route → best raw score

    @property
    def best_distance(self) -> float | None:
        """The smallest dense distance over the document's chunks (every chunk carries one)."""
        found = [c.scores["dense_distance"] for c in self.chunks if "dense_distance" in c.scores]
        return min(found) if found else None


def rrf(
    routes: Mapping[str, Sequence[RouteHit]],
    weights: Mapping[str, float] | None = None,
    k: int = 60,
    limit: int | None = None,
) -> list[FusedHit]:
    """``score(c) = Σ_route w_route / (k + rank_route(c))`` over chunks; ties keep route order.

    Every chunk keeps its dense distance as ``scores["dense_distance"]``: the dense route's own
    score, or the distance a non-dense route carried in its fields.
    """
    fused: dict[str, FusedHit] = {}
    for route, hits in routes.items():
        w = 1.0 if weights is None else weights.get(route, 1.0)
        for rank, hit in enumerate(hits, start=1):
            fields = dict(hit.fields)
            distance = hit.score if route == DENSE_ROUTE else fields.pop("dense_distance", None)
            f = fused.get(hit.pk)
            if f is None:
                f = fused[hit.pk] = FusedHit(hit.pk, 0.0, fields)
            else:
                f.fields.update({k_: v for k_, v in fields.items() if k_ not in f.fields})
            f.rrf += w / (k + rank)
            f.ranks[route] = rank
            f.scores[route] = hit.score
            if distance is not None:
                f.scores["dense_distance"] = distance
    ordered = sorted(fused.values(), key=lambda h: -h.rrf)
    return ordered[:limit] if limit else ordered


def _better(route: str, new: float, old: float | None) -> bool:
    if old is None:
        return True
    return new < old if route == DENSE_ROUTE else new > old


def fuse_documents(
    routes: Mapping[str, Sequence[RouteHit]],
    weights: Mapping[str, float] | None = None,
    k: int = 60,
    doc_routes: Mapping[str, Sequence[str]] | None = None,
) -> list[DocHit]:
    """Documents ranked by weighted RRF over their per-route document ranks, best first.

    ``doc_routes`` are routes that rank documents (by path) rather than chunks, e.g. L0 matches.
    Chunks inside a document are ordered by their own chunk-level RRF.
    """
    weights = weights or {}
    docs: dict[str, DocHit] = {}
    for chunk in rrf(routes, weights, k):
        path = str(chunk.fields.get(PATH, ""))
        docs.setdefault(path, DocHit(path)).chunks.append(chunk)
    for route, hits in routes.items():
        order: list[str] = []
        for hit in hits:
            path = str(hit.fields.get(PATH, ""))
            doc = docs[path]
            if path not in order:
                order.append(path)
                doc.ranks[route] = len(order)
            if _better(route, hit.score, doc.scores.get(route)):
                doc.scores[route] = hit.score
    for route, paths in (doc_routes or {}).items():
        for rank, path in enumerate(dict.fromkeys(paths), start=1):
            docs.setdefault(path, DocHit(path)).ranks[route] = rank
    for doc in docs.values():
        doc.rrf = sum(weights.get(r, 1.0) / (k + rank) for r, rank in doc.ranks.items())
    return sorted(docs.values(), key=lambda d: -d.rrf)
