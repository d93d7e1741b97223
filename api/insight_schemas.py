"""Response models of the case library and the insights (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from api.schemas import Camel, Page, SessionSummary

EXCERPT_CHARS = 200


class CaseSummary(Camel):
    case_id: str
    session_id: str
    title: str
    category: str
    source: str
    excerpt: str = Field(description=f"the solution's first {EXCERPT_CHARS} characters")
    created_at: datetime


class CasePage(Page):
    items: list[CaseSummary]
    q: str | None = Field(description="the search text applied, if any")


class CaseDetail(Camel):
    case_id: str
    session_id: str
    title: str
    problem: str | None
    root_cause: str | None
    solution: str | None
    category: str
    source: str
    tags: list[str] | None
    created_at: datetime
    session: SessionSummary | None = Field(description="the session the case was filed from")


class Count(Camel):
    key: str | None = Field(description="the value; null = none recorded (e.g. not deduplicated)")
    count: int


class Bin(Camel):
    lo: float
    hi: float
    count: int


class Bucket(Camel):
    start: datetime
    sessions: int
    lookups: int


class ToolLatency(Camel):
    tool: str
    calls: int
    p50_ms: float | None
    p95_ms: float | None
    max_ms: float | None


class FeedbackRates(Camel):
    sessions: int
    useful: int
    not_useful: int
    no_feedback: int
    cases: int = Field(description="cases filed in the window (useful sessions not retracted)")
    feedback_rate: float | None = Field(description="sessions with any feedback / sessions")
    useful_rate: float | None = Field(description="useful / sessions with feedback")


class Insights(Camel):
    since: datetime | None
    until: datetime
    bucket: Literal["hour", "day", "week"]
    bucket_seconds: int = Field(
        description="the timeline's bucket width; past 400 weeks a bucket holds several weeks"
    )
    sessions_by_status: dict[str, int]
    lookups: int
    relevance_levels: list[Count] = Field(description="查询质量分布: lookups per relevance level")
    dedup_reasons: list[Count] = Field(description="去重原因分布: lookups per dedup reason")
    similarity: list[Bin] = Field(description="归一化分数分布: the best hit's dense similarity")
    confidence: list[Bin] = Field(
        description="the relevance judge's confidence for the top document"
    )
    evidence_scores: list[Bin] = Field(description="sessions per evidence score (0-100)")
    evidence_mean: float | None
    feedback: FeedbackRates
    timeline: list[Bucket] = Field(description="sessions and lookups per bucket, gaps at zero")
    tool_latency: list[ToolLatency]
    empty: bool = Field(description="true when the window holds no session and no tool call")
