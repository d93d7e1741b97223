"""Per-request lookup settings (the retrieval-test page's controls). Pure.

The server's configured ``LookupConfig`` stays as it is; a request gets a copy with the values it
named replaced, so one operator's experiment never changes what the agent or anyone else sees.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from retrieval.lookup.service import LookupConfig


@dataclass(frozen=True)
class LookupOverrides:
    """Each field None = the server's setting."""

    top_k: int | None = None
    highly_relevant_threshold: float | None = None
    reference_threshold: float | None = None
    dense_weight: float | None = None
    bm25_weight: float | None = None
    judge: str | None = None

    def named(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self) if getattr(self, f.name) is not None]


def apply(base: LookupConfig, o: LookupOverrides) -> LookupConfig:
    """A copy of ``base`` with the overridden values (thresholds are checked by the caller)."""
    thresholds = dataclasses.replace(
        base.thresholds,
        highly_relevant=_or(o.highly_relevant_threshold, base.thresholds.highly_relevant),
        reference=_or(o.reference_threshold, base.thresholds.reference),
    )
    return dataclasses.replace(
        base,
        thresholds=thresholds,
        top_k=_or(o.top_k, base.top_k),
        dense_weight=_or(o.dense_weight, base.dense_weight),
        bm25_weight=_or(o.bm25_weight, base.bm25_weight),
        judge=_or(o.judge, base.judge),
    )


def effective(cfg: LookupConfig, o: LookupOverrides) -> dict[str, Any]:
    """What the lookup ran with, and which of it the request chose (shown with the result)."""
    return {
        "top_k": cfg.top_k,
        "highly_relevant_threshold": cfg.thresholds.highly_relevant,
        "reference_threshold": cfg.thresholds.reference,
        "dense_weight": cfg.dense_weight,
        "bm25_weight": cfg.bm25_weight,
        "judge": cfg.judge,
        "overridden": o.named(),
    }


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value
