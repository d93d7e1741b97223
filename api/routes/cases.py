"""The case library: sessions operators marked useful, searchable, exportable as eval scenarios."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from api.deps import Guarded, JsonBody, ServicesDep, SessionDep
from api.errors import ApiError, responses
from api.eval_schemas import CheckOut, ScenarioDraftOut, ScenarioSaved, ScenarioSaveRequest
from api.insight_schemas import EXCERPT_CHARS, CaseDetail, CasePage, CaseSummary
from api.schemas import SessionSummary
from evals import export
from evals.export import CaseNotExportable, CaseNotFound
from evals.loader import ScenarioError, dump_scenario
from evals.schema import CATEGORIES, INTENTS
from persistence import cases as cases_repo
from persistence import repository as repo

router = APIRouter(prefix="/api/cases", tags=["cases"], dependencies=Guarded)
ERRORS = responses(401, 403, 404, 422, 503)


def _summary(row: Any) -> CaseSummary:
    excerpt = (row.solution or row.problem or "")[:EXCERPT_CHARS]
    return CaseSummary.model_validate({**row.model_dump(), "excerpt": excerpt})


@router.get("", response_model=CasePage, responses=ERRORS)
async def list_cases(
    session: SessionDep,
    q: Annotated[
        str | None,
        Query(max_length=200, description="text in the title, problem, root cause or solution"),
    ] = None,
    page: Annotated[int, Query(ge=1, le=100000)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=200)] = 20,
) -> Any:
    """Cases newest first, ``pageSize`` per page; ``q`` filters by text."""
    result = await cases_repo.list_cases(
        session, q=q, limit=page_size, offset=(page - 1) * page_size
    )
    return CasePage(
        items=[_summary(r) for r in result.items],
        total=result.total,
        page=page,
        page_size=page_size,
        q=(q or "").strip() or None,
    )


@router.get("/{case_id}", response_model=CaseDetail, responses=ERRORS)
async def get_case(session: SessionDep, case_id: str) -> Any:
    """One case in full, with the session it was filed from."""
    case = await cases_repo.get_case(session, case_id)
    if case is None:
        raise ApiError(
            404,
            "case_not_found",
            f"case {case_id} does not exist (it may have been retracted); "
            "list the cases with GET /api/cases",
        )
    filed_from = await repo.get_session(session, case.session_id)
    detail = CaseDetail.model_validate({**case.model_dump(), "session": None})
    if filed_from is not None:
        detail.session = SessionSummary.model_validate(filed_from)
        detail.session.evidence_score = (filed_from.self_evaluation or {}).get("evidence_score")
    return detail


# --- a case as an incident scenario ----------------------------------------------------------------


def _checks(draft: Any) -> list[CheckOut]:
    return [CheckOut(**c.as_dict()) for c in draft.checks]


def _export_error(exc: Exception) -> ApiError:
    if isinstance(exc, CaseNotFound):
        return ApiError(404, "case_not_found", str(exc))
    if isinstance(exc, CaseNotExportable):
        return ApiError(409, "case_not_exportable", str(exc))
    if isinstance(exc, FileExistsError):
        return ApiError(409, "scenario_exists", str(exc))
    assert isinstance(exc, ScenarioError)
    return ApiError(422, "invalid_scenario", "; ".join(exc.problems))


@router.get(
    "/{case_id}/scenario", response_model=ScenarioDraftOut, responses=ERRORS | responses(409)
)
async def scenario_draft(services: ServicesDep, case_id: str) -> Any:
    """The case as a draft incident scenario: its conversation, the world its tools saw, the
    runbooks and evidence its answer used, its cost plus headroom — judged against the recorded
    answer. The root cause is left for the operator to fill in before saving."""
    try:
        draft = await export.draft_from_case(services, case_id)
    except (CaseNotFound, CaseNotExportable) as exc:
        raise _export_error(exc) from None
    path = export.scenario_path(services, draft.scenario.id)
    return ScenarioDraftOut(
        scenario=draft.scenario,
        yaml=dump_scenario(draft.scenario),
        path=str(path),
        exists=path.exists(),
        recorded_checks=_checks(draft),
        passes_on_recorded_answer=draft.passes,
        warnings=draft.warnings,
        categories=CATEGORIES,
        intents=INTENTS,
    )


@router.post(
    "/{case_id}/scenario",
    response_model=ScenarioSaved,
    status_code=201,
    dependencies=JsonBody,
    responses=ERRORS | responses(409, 415),
)
async def save_scenario(services: ServicesDep, case_id: str, body: ScenarioSaveRequest) -> Any:
    """Save the edited scenario under DATA_DIR/evals/scenarios/<id>.yaml (``python -m evals run
    --suite local`` runs it). 422 when it names runbooks the knowledge base lacks or gives no root
    cause; 409 when that id is saved already (``overwrite: true`` replaces it)."""
    try:
        path, text, judged = await export.save_from_case(
            services, case_id, body.scenario, overwrite=body.overwrite
        )
    except (CaseNotFound, CaseNotExportable, FileExistsError, ScenarioError) as exc:
        raise _export_error(exc) from None
    return ScenarioSaved(
        scenario_id=body.scenario.id,
        path=str(path),
        yaml=text,
        recorded_checks=_checks(judged),
        passes_on_recorded_answer=judged.passes,
    )
