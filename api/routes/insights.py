"""Insights: the run records summarised for the console's charts."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from api.deps import Guarded, SessionDep
from api.errors import responses
from api.insight_schemas import Bin, Bucket, Count, FeedbackRates, Insights, ToolLatency
from api.ranges import moment_range
from persistence import bucketing
from persistence.insights import Insights as Read
from persistence.insights import Window, read_insights

router = APIRouter(prefix="/api/insights", tags=["insights"], dependencies=Guarded)
ERRORS = responses(400, 401, 403, 422, 503)
STATUSES = ("RUNNING", "SUCCESS", "FAILED")


def _feedback(totals: dict[str, int]) -> FeedbackRates:
    given = totals["useful"] + totals["not_useful"]
    return FeedbackRates(
        sessions=totals["total"],
        useful=totals["useful"],
        not_useful=totals["not_useful"],
        no_feedback=totals["no_feedback"],
        cases=totals["cases"],
        feedback_rate=bucketing.ratio(given, totals["total"]),
        useful_rate=bucketing.ratio(totals["useful"], given),
    )


def _bins(xs: list[bucketing.Bin]) -> list[Bin]:
    return [Bin(lo=x.lo, hi=x.hi, count=x.count) for x in xs]


def _out(r: Read) -> Insights:
    return Insights(
        since=r.since,
        until=r.until,
        bucket=r.unit,  # type: ignore[arg-type]
        bucket_seconds=r.step_s,
        sessions_by_status={s: r.sessions.get(s, 0) for s in STATUSES},
        lookups=r.lookups,
        relevance_levels=[Count(key=k, count=n) for k, n in r.relevance],
        dedup_reasons=[Count(key=k, count=n) for k, n in r.dedup],
        similarity=_bins(r.similarity),
        confidence=_bins(r.confidence),
        evidence_scores=_bins(r.evidence),
        evidence_mean=r.evidence_mean,
        feedback=_feedback(r.sessions),
        timeline=[
            Bucket(
                start=t.start,
                sessions=t.counts.get("sessions", 0),
                lookups=t.counts.get("lookups", 0),
            )
            for t in r.timeline
        ],
        tool_latency=[ToolLatency(**vars(x)) for x in r.latency],
        empty=not r.sessions["total"] and not r.latency,
    )


@router.get("", response_model=Insights, responses=ERRORS)
async def insights(
    session: SessionDep,
    since: Annotated[
        str | None,
        Query(
            max_length=40,
            description="window start: a date (from 00:00 UTC) or an ISO date-time (no offset = UTC)",
        ),
    ] = None,
    until: Annotated[
        str | None,
        Query(
            max_length=40,
            description="window end: a date (the whole day, UTC) or an ISO date-time; default now",
        ),
    ] = None,
    bucket: Annotated[
        Literal["hour", "day", "week"] | None,
        Query(description="timeline bucket; default from the window's span (widened past 400)"),
    ] = None,
) -> Any:
    """Distributions of relevance levels, dedup reasons, similarity, judge confidence and
    evidence scores; feedback rates; sessions and lookups over time; tool latency."""
    lo, hi = moment_range(
        ("since", "until"), since, until, code="invalid_window", hint="swap them or leave one out"
    )
    window = Window(lo, hi)
    result = await read_insights(session, window, bucket)
    return _out(result)
