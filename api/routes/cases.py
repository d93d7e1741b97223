"""The case library: sessions operators marked useful, searchable."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from api.deps import Guarded, ServicesDep
from api.errors import ApiError, responses
from api.insight_schemas import EXCERPT_CHARS, CaseDetail, CasePage, CaseSummary
from api.schemas import SessionSummary
from persistence import cases as cases_repo
from persistence import repository as repo

router = APIRouter(prefix="/api/cases", tags=["cases"], dependencies=Guarded)
ERRORS = responses(401, 403, 404, 422, 503)


def _summary(row: Any) -> CaseSummary:
    excerpt = (row.solution or row.problem or "")[:EXCERPT_CHARS]
    return CaseSummary.model_validate({**row.model_dump(), "excerpt": excerpt})


@router.get("", response_model=CasePage, responses=ERRORS)
async def list_cases(
    services: ServicesDep,
    q: Annotated[
        str | None,
        Query(max_length=200, description="text in the title, problem, root cause or solution"),
    ] = None,
    page: Annotated[int, Query(ge=1, le=100000)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=200)] = 20,
) -> Any:
    """Cases newest first, ``pageSize`` per page; ``q`` filters by text."""
    async with services.db.session() as s:
        result = await cases_repo.list_cases(s, q=q, limit=page_size, offset=(page - 1) * page_size)
    return CasePage(
        items=[_summary(r) for r in result.items],
        total=result.total,
        page=page,
        page_size=page_size,
        q=(q or "").strip() or None,
    )


@router.get("/{case_id}", response_model=CaseDetail, responses=ERRORS)
async def get_case(services: ServicesDep, case_id: str) -> Any:
    """One case in full, with the session it was filed from."""
    async with services.db.session() as s:
        case = await cases_repo.get_case(s, case_id)
        if case is None:
            raise ApiError(
                404,
                "case_not_found",
                f"case {case_id} does not exist (it may have been retracted); "
                "list the cases with GET /api/cases",
            )
        session = await repo.get_session(s, case.session_id)
    detail = CaseDetail.model_validate({**case.model_dump(), "session": None})
    if session is not None:
        detail.session = SessionSummary.model_validate(session)
        detail.session.evidence_score = (session.self_evaluation or {}).get("evidence_score")
    return detail
