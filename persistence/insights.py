"""Insights over the run records: how lookups were judged and deduplicated, how similar their best
hits were, evidence scores, feedback, activity over time and tool latency.

The reads are plain column reads over one time window, the same on SQLite and MySQL (JSON values
through SQLAlchemy's JSON path operators, which compile per dialect); the arithmetic is in
``persistence/bucketing.py``. Only traffic counts (``TRAFFIC_ORIGINS``): the sessions of replays and
eval runs, and their tool calls, are recorded like any other but are not user activity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from persistence import bucketing as b
from persistence.models import (
    TRAFFIC_ORIGINS,
    CaseLibrary,
    DiagnosisSession,
    ToolInvocation,
    utcnow,
)

LOOKUP_TOOL = "lookup_knowledge"
LEVELS = ("PRECISE", "HIGHLY_RELEVANT", "REFERENCE", "NONE")
DEDUP_REASONS = ("doc_retrieved", "domain_retrieved", "budget_exhausted")
SIMILARITY_BINS = 10
EVIDENCE_BINS = 10


@dataclass
class Window:
    since: datetime | None = None
    until: datetime | None = None

    def __post_init__(self) -> None:
        # Stored datetimes are UTC without an offset on both engines; compare like with like.
        self.since = b.as_utc(self.since) if self.since else None
        self.until = b.as_utc(self.until) if self.until else None

    def conds(self, created: Any) -> list[Any]:
        out = []
        if self.since is not None:
            out.append(created >= self.since)
        if self.until is not None:
            out.append(created <= self.until)
        return out


@dataclass
class Insights:
    since: datetime | None
    until: datetime
    unit: str
    lookups: int
    relevance: list[tuple[str | None, int]]
    dedup: list[tuple[str | None, int]]
    similarity: list[b.Bin]
    confidence: list[b.Bin]
    evidence: list[b.Bin]
    evidence_mean: float | None
    sessions: dict[str, int]  # total, by status, by feedback, cases
    timeline: list[b.Bucket] = field(default_factory=list)
    latency: list[b.Latency] = field(default_factory=list)
    step_s: int = 3600  # the timeline's bucket width (several weeks for windows of decades)


def _traffic(session_id: Any) -> Any:
    """Rows of traffic sessions only (see ``TRAFFIC_ORIGINS``)."""
    return col(session_id).in_(
        sa.select(DiagnosisSession.session_id).where(
            col(DiagnosisSession.origin).in_(TRAFFIC_ORIGINS)
        )
    )


def _json_float(column: Any, key: str) -> Any:
    return column[key].as_float()


async def _grouped(s: AsyncSession, column: Any, window: Window) -> dict[str | None, int]:
    stmt = (
        sa.select(column, sa.func.count())
        .where(
            col(ToolInvocation.tool_name) == LOOKUP_TOOL,
            _traffic(ToolInvocation.session_id),
            *window.conds(ToolInvocation.created_at),
        )
        .group_by(column)
    )
    return {key: int(n) for key, n in (await s.execute(stmt)).all()}


async def _invocation_rows(s: AsyncSession, window: Window) -> list[tuple[Any, ...]]:
    """(created_at, tool, duration_ms, similarity, confidence) of every call in the window, in
    one pass: the rows carry large JSON, and each scan of them costs more than the arithmetic."""
    details = col(ToolInvocation.retrieval_details)
    stmt = sa.select(
        ToolInvocation.created_at,
        ToolInvocation.tool_name,
        ToolInvocation.duration_ms,
        _json_float(details, "l1_top_similarity"),
        _json_float(details, "confidence"),
    ).where(_traffic(ToolInvocation.session_id), *window.conds(ToolInvocation.created_at))
    return list((await s.execute(stmt)).all())


async def _session_rows(s: AsyncSession, window: Window) -> list[tuple[Any, ...]]:
    evaluation = col(DiagnosisSession.self_evaluation)
    stmt = sa.select(
        DiagnosisSession.created_at,
        DiagnosisSession.status,
        DiagnosisSession.feedback,
        _json_float(evaluation, "evidence_score"),
    ).where(
        col(DiagnosisSession.origin).in_(TRAFFIC_ORIGINS),
        *window.conds(DiagnosisSession.created_at),
    )
    return list((await s.execute(stmt)).all())


async def _case_count(s: AsyncSession, window: Window) -> int:
    stmt = sa.select(sa.func.count()).select_from(CaseLibrary)
    stmt = stmt.where(*window.conds(CaseLibrary.created_at))
    return int((await s.execute(stmt)).scalar_one())


def _session_totals(rows: list[tuple[Any, ...]], cases: int) -> dict[str, int]:
    totals = {"total": len(rows), "cases": cases, "useful": 0, "not_useful": 0, "no_feedback": 0}
    for _, status, fb, _ in rows:
        totals[status] = totals.get(status, 0) + 1
        totals[fb if fb in ("useful", "not_useful") else "no_feedback"] += 1
    return totals


def _valid(v: Any) -> bool:
    return v is not None


async def read_insights(s: AsyncSession, window: Window, unit: str | None = None) -> Insights:
    """All the insights for ``window`` (open ends: since the first record, until now). ``unit``
    (hour/day/week) buckets the timeline; by default it follows the window's span."""
    until = window.until or utcnow()
    relevance = await _grouped(s, col(ToolInvocation.relevance_level), window)
    dedup = await _grouped(s, col(ToolInvocation.dedup_reason), window)
    calls = await _invocation_rows(s, window)
    scores = [(ts, sim, conf) for ts, tool, _, sim, conf in calls if tool == LOOKUP_TOOL]
    sessions = await _session_rows(s, window)
    cases = await _case_count(s, window)
    events = [(ts, "sessions") for ts, *_ in sessions] + [(ts, "lookups") for ts, *_ in scores]
    starts = [b.as_utc(ts) for ts, _ in events]
    start = window.since or (min(starts) if starts else None)
    timeline: list[b.Bucket] = []
    chosen = unit or "hour"
    step = b.UNITS[chosen]
    if start is not None:
        chosen, step = b.fit_step(start, until, unit or b.choose_unit(start, until))
        timeline = b.time_series(events, start, until, chosen, step)
    evidence = [float(e) for *_, e in sessions if _valid(e)]
    return Insights(
        since=window.since,
        until=until,
        unit=chosen,
        lookups=len(scores),
        relevance=b.ranked_counts(relevance, LEVELS),
        dedup=b.ranked_counts(dedup, DEDUP_REASONS),
        similarity=b.histogram((v for _, v, _ in scores if _valid(v)), 0.0, 1.0, SIMILARITY_BINS),
        confidence=b.histogram((v for *_, v in scores if _valid(v)), 0.0, 1.0, SIMILARITY_BINS),
        evidence=b.histogram(evidence, 0.0, 100.0, EVIDENCE_BINS),
        evidence_mean=round(sum(evidence) / len(evidence), 1) if evidence else None,
        sessions=_session_totals(sessions, cases),
        timeline=timeline,
        latency=b.latency_by_tool((tool, ms) for _, tool, ms, *_ in calls),
        step_s=int(step.total_seconds()),
    )
