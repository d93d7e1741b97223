"""Eval runs of the incident eval suite (``python -m evals run``): listed for the console."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from api.deps import Guarded, SessionDep
from api.errors import ApiError, responses
from api.eval_schemas import EvalResultOut, EvalRunDetail, EvalRunOut, EvalRunPage
from persistence import eval_runs

router = APIRouter(prefix="/api/evals", tags=["evals"], dependencies=Guarded)
ERRORS = responses(401, 403, 404, 422, 503)


@router.get("/runs", response_model=EvalRunPage, responses=ERRORS)
async def list_runs(
    session: SessionDep,
    page: Annotated[int, Query(ge=1, le=100000)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=200)] = 20,
) -> Any:
    """Eval runs newest first: model, commit, prompt version, pass rate, cost."""
    result = await eval_runs.list_runs(session, limit=page_size, offset=(page - 1) * page_size)
    return EvalRunPage(
        items=[EvalRunOut.model_validate(r) for r in result.items],
        total=result.total,
        page=page,
        page_size=page_size,
    )


@router.get("/runs/{run_id}", response_model=EvalRunDetail, responses=ERRORS)
async def get_run(session: SessionDep, run_id: str) -> Any:
    """One eval run with every scenario's checks (failures first) and its sessions."""
    run = await eval_runs.get_run(session, run_id)
    if run is None:
        raise ApiError(
            404,
            "eval_run_not_found",
            f"eval run {run_id} does not exist; list them with GET /api/evals/runs",
        )
    results = await eval_runs.run_results(session, run_id)
    return EvalRunDetail(
        run=EvalRunOut.model_validate(run),
        results=[
            EvalResultOut.model_validate(
                {**r.model_dump(), "checks": r.checks or [], "session_ids": r.session_ids or []}
            )
            for r in results
        ],
    )
