"""The reads behind the knowledge-gap report (``persistence/gaps.py`` holds its logic): traffic
lookups in a window with their session's question, and the enabled, indexed runbooks."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from persistence import gaps
from persistence.insights import LOOKUP_TOOL, Window
from persistence.models import (
    TRAFFIC_ORIGINS,
    ApiDocument,
    DiagnosisSession,
    DocumentStatus,
    ToolInvocation,
    utcnow,
)

MAX_LOOKUPS = 5000  # newest first; a report over more than this reads a recent sample


def _alertname(params: dict[str, Any] | None) -> str | None:
    alert = (params or {}).get("alert")
    if not isinstance(alert, dict):
        return None
    name = alert.get("alertname") or (alert.get("labels") or {}).get("alertname")
    return str(name)[:200] if name else None


def _sources(details: dict[str, Any] | None, by_title: dict[str, str]) -> tuple[str, ...]:
    """The runbooks a lookup returned: its L0 matches (recorded by title) and the L1 documents
    it showed, in that order, once each."""
    details = details or {}
    l0 = [by_title[t] for t in details.get("l0_titles") or [] if t in by_title]
    l1 = [
        d["source"]
        for d in details.get("documents") or []
        if isinstance(d, dict) and d.get("shown") and d.get("source")
    ]
    return tuple(dict.fromkeys([*l0, *l1]))


async def lookup_rows(
    s: AsyncSession, window: Window, by_title: dict[str, str] | None = None
) -> list[gaps.LookupRow]:
    stmt = (
        sa.select(
            ToolInvocation.session_id,
            ToolInvocation.created_at,
            ToolInvocation.input_params,
            ToolInvocation.relevance_level,
            ToolInvocation.retrieval_details,
            DiagnosisSession.query,
        )
        .join(DiagnosisSession, DiagnosisSession.session_id == ToolInvocation.session_id)
        .where(
            col(ToolInvocation.tool_name) == LOOKUP_TOOL,
            col(ToolInvocation.success).is_(True),
            col(DiagnosisSession.origin).in_(TRAFFIC_ORIGINS),
            *window.conds(ToolInvocation.created_at),
        )
        .order_by(col(ToolInvocation.created_at).desc())
        .limit(MAX_LOOKUPS)
    )
    out = []
    for sid, at, params, level, details, question in (await s.execute(stmt)).all():
        query = str((params or {}).get("query") or "")
        out.append(
            gaps.LookupRow(
                sid,
                at,
                question or query,
                query,
                _alertname(params),
                level,
                _sources(details, by_title or {}),
            )
        )
    return out


async def document_rows(s: AsyncSession) -> list[gaps.DocRow]:
    stmt = sa.select(ApiDocument).where(
        col(ApiDocument.enabled).is_(True), ApiDocument.status == DocumentStatus.INDEXED
    )
    return [
        gaps.DocRow(
            d.file_path,
            d.title,
            d.category,
            d.version,
            d.updated_at,
            tuple((d.doc_metadata or {}).get("keywords") or ()),
        )
        for d in (await s.scalars(stmt)).all()
    ]


async def read_gaps(
    s: AsyncSession, window: Window, stale_days: int, now: datetime | None = None
) -> dict[str, list[gaps.Gap]]:
    docs = await document_rows(s)
    rows = await lookup_rows(s, window, {d.title: d.path for d in docs if d.title})
    return {
        "alerts": gaps.alert_gaps(rows),
        "questions": gaps.question_gaps(rows),
        "unused": gaps.unused_runbooks(docs, rows),
        "stale": gaps.stale_runbooks(docs, rows, now or utcnow(), stale_days),
    }
