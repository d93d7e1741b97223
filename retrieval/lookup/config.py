"""The lookup's configuration, its outcome and the de-duplication reasons (``lookup.py`` uses them)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from retrieval.judging.calibration import Calibration
from retrieval.judging.relevance import Thresholds
from retrieval.lookup.memory import SessionMemory
from settings import RetrievalSettings


class DedupReason:
    DOC = "doc_retrieved"  # every matching document was already returned this session
    DOMAIN = "domain_retrieved"  # the domain has nothing left that was not returned
    BUDGET = "budget_exhausted"  # the session's lookup budget is spent; nothing was searched


SETTING = "setting"  # a LookupConfig field's path in ``RetrievalSettings``
# The server's defaults are stated once, in settings.py; a LookupConfig built without settings
# (tests, tools) takes them from there.
_DEFAULTS = RetrievalSettings()


def _setting(path: str) -> Any:
    """A field the setting ``retrieval.<path>`` gives, with that setting's default."""
    return field(default=_read(_DEFAULTS, path), metadata={SETTING: path})


def _read(settings: Any, path: str) -> Any:
    for part in path.split("."):
        settings = getattr(settings, part)
    return settings


@dataclass
class LookupConfig:
    thresholds: Thresholds = field(
        default_factory=lambda: Thresholds.from_settings(_DEFAULTS.normalization)
    )
    judge: str = _setting("relevance.judge")  # "calibrated", or "dense": the dense similarity
    calibration: Calibration | None = None  # None: the packaged retrieval/judging/calibration.json
    top_k: int = _setting("top_k")  # documents shown: the primary and up to top_k − 1 supplements
    candidates: int = _setting("candidates")  # chunks fetched per route
    rrf_k: int = _setting("rrf_k")
    dense_weight: float = _setting("dense_weight")
    bm25_weight: float = _setting("bm25_weight")
    l0_weight: float = _setting("l0_weight")
    budget: int = _setting("session_lookup_budget")
    primary_chars: int = 1600
    supplement_chars: int = 600
    supplement_floor: float = _setting("supplement_floor")  # a supplement's own evidence

    @classmethod
    def from_settings(cls, r: Any) -> LookupConfig:
        """The configuration ``RetrievalSettings`` ``r`` gives (every field marked ``_setting``)."""
        cal_file = r.relevance.calibration_file
        return cls(
            thresholds=Thresholds.from_settings(r.normalization),
            calibration=Calibration.load(cal_file) if cal_file else Calibration.load(),
            **{f.name: _read(r, f.metadata[SETTING]) for f in fields(cls) if SETTING in f.metadata},
        )


@dataclass
class LookupOutcome:
    payload: dict[str, Any]  # model-facing
    artifact: dict[str, Any]  # raw scores for the records
    memory: SessionMemory  # the session memory after this lookup
    served: dict[str, list[str]]  # domain → paths whose content this lookup returned
