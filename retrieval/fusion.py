"""Reciprocal-rank fusion of the dense and BM25 routes, keeping each route's own score. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RouteHit:
    pk: str
    score: (
        float  # dense: squared L2 distance (lower is better); bm25: BM25 score (higher is better)
    )
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class FusedHit:
    pk: str
    rrf: float
    fields: dict[str, Any]
    ranks: dict[str, int] = field(default_factory=dict)  # route → 1-based rank
    scores: dict[str, float] = field(default_factory=dict)  # route → that route's raw score


def rrf(
    routes: Mapping[str, Sequence[RouteHit]],
    weights: Mapping[str, float] | None = None,
    k: int = 60,
    limit: int | None = None,
) -> list[FusedHit]:
    """``score(d) = Σ_route w_route / (k + rank_route(d))``; ties keep the first route's order."""
    fused: dict[str, FusedHit] = {}
    for route, hits in routes.items():
        w = 1.0 if weights is None else weights.get(route, 1.0)
        for rank, hit in enumerate(hits, start=1):
            f = fused.get(hit.pk)
            if f is None:
                f = fused[hit.pk] = FusedHit(hit.pk, 0.0, dict(hit.fields))
            else:
                f.fields.update({k_: v for k_, v in hit.fields.items() if k_ not in f.fields})
            f.rrf += w / (k + rank)
            f.ranks[route] = rank
            f.scores[route] = hit.score
    ordered = sorted(fused.values(), key=lambda h: -h.rrf)
    return ordered[:limit] if limit else ordered
