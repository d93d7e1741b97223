"""Knowledge gaps and runbook coverage (``GET /api/insights/gaps``) and "draft a runbook" for one
of them (``POST /api/insights/gaps/draft``): a Markdown skeleton the upload form opens; with a
hosted model the skeleton is filled in."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import Field

from api.deps import Guarded, JsonBody, ServicesDep, SessionDep
from api.errors import ApiError, responses
from api.schemas import Camel, camelize
from persistence import gaps
from persistence.gap_reads import read_gaps
from persistence.insights import Window

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api/insights", tags=["insights"], dependencies=Guarded)
ERRORS = responses(400, 401, 403, 404, 415, 422, 503)
KINDS = {"alert": "alerts", "question": "questions", "unused": "unused", "stale": "stale"}
Since = Annotated[datetime | None, Query(description="window start, ISO 8601 (no offset = UTC)")]
Until = Annotated[datetime | None, Query(description="window end, ISO 8601; default now")]
StaleDays = Annotated[
    int,
    Query(
        alias="staleDays",
        ge=0,
        le=3650,
        description="a runbook dated (version date, else last update) longer ago is old",
    ),
]


class Evidence(Camel):
    session_id: str
    at: datetime
    question: str
    level: str
    sources: list[str]


class GapOut(Camel):
    kind: str
    key: str
    title: str
    count: int
    last_seen: datetime | None
    evidence: list[Evidence]
    detail: dict[str, Any]


class GapsOut(Camel):
    since: datetime | None
    until: datetime | None
    stale_days: int
    alerts: list[GapOut]
    questions: list[GapOut]
    unused: list[GapOut]
    stale: list[GapOut]


class DraftRequest(Camel):
    kind: Literal["alert", "question", "unused", "stale"]
    key: str = Field(min_length=1, max_length=500)
    since: datetime | None = None
    until: datetime | None = None
    stale_days: int = Field(default=180, ge=0, le=3650)


class DraftOut(Camel):
    file_name: str
    markdown: str
    filled: bool = Field(description="true: a hosted model filled the skeleton in")
    category: str | None = None


def _window(since: datetime | None, until: datetime | None) -> Window:
    window = Window(since, until)
    if window.since and window.until and window.since > window.until:
        raise ApiError(
            400, "invalid_window", f"since ({since}) is after until ({until}); swap them"
        )
    return window


def _gap(g: gaps.Gap) -> GapOut:
    return GapOut(
        kind=g.kind,
        key=g.key,
        title=g.title,
        count=g.count,
        last_seen=g.last_seen,
        evidence=[Evidence(**e) for e in g.evidence],
        # ``levels`` is keyed by relevance level (data, not names): left as it is.
        detail=camelize({k: v for k, v in g.detail.items() if k != "levels"})
        | ({"levels": g.detail["levels"]} if "levels" in g.detail else {}),
    )


@router.get("/gaps", response_model=GapsOut, responses=ERRORS)
async def knowledge_gaps(
    session: SessionDep, since: Since = None, until: Until = None, stale_days: StaleDays = 180
) -> Any:
    """(a) alerts that fired and found no runbook or only REFERENCE, by alert name; (b) questions
    answered "not found", clustered; (c) runbooks no lookup returned; (d) old runbooks whose
    alerts keep firing. User and Studio traffic only (not replays or eval runs)."""
    window = _window(since, until)
    found = await read_gaps(session, window, stale_days)
    return GapsOut(
        since=window.since,
        until=window.until,
        stale_days=stale_days,
        **{name: [_gap(g) for g in found[name]] for name in KINDS.values()},
    )


async def _fill(services: Any, skeleton: str) -> str | None:
    """The skeleton filled in by the hosted model; None offline or when the model fails."""
    if services.settings.chat_model_kind != "openai-compatible":
        return None
    try:
        model = services.deps.models.for_role("runbook_draft")
        reply = await model.ainvoke(
            [SystemMessage(services.deps.prompts["runbook_draft"]), HumanMessage(skeleton)]
        )
    except Exception:
        log.warning("the hosted model could not fill the runbook draft", exc_info=True)
        return None
    text = reply.content if isinstance(reply.content, str) else ""
    text = text.strip().removeprefix("```markdown").removeprefix("```").removesuffix("```")
    return text.strip() + "\n" if text.strip().startswith("---") else None


@router.post("/gaps/draft", response_model=DraftOut, dependencies=JsonBody, responses=ERRORS)
async def draft_runbook(body: DraftRequest, services: ServicesDep, session: SessionDep) -> Any:
    """A runbook for one gap: frontmatter (the alert name as keyword), Meaning / Impact /
    Diagnosis / Mitigation and the evidence of the sessions that hit it. Offline a skeleton;
    with a hosted model (LLM_BASE_URL) filled in."""
    window = _window(body.since, body.until)
    found = await read_gaps(session, window, body.stale_days)
    await session.close()  # the read is done: no connection held while the model writes
    gap = next((g for g in found[KINDS[body.kind]] if g.key == body.key), None)
    if gap is None:
        raise ApiError(
            404,
            "gap_not_found",
            f"no {body.kind} gap '{body.key[:100]}' in this window; reload the gap report",
        )
    out = gaps.draft(gap)
    filled = await _fill(services, out["markdown"])
    category = (gap.detail.get("category") or None) if gap.kind in ("unused", "stale") else None
    return DraftOut(
        file_name=out["file_name"],
        markdown=filled or out["markdown"],
        filled=filled is not None,
        category=category,
    )
