"""Sessions: list, full trace, checkpoints, replay."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from api.deps import Guarded, JsonBody, ReplayerDep, RunnerDep, SessionDep
from api.errors import ApiError, responses
from api.ranges import day_range
from api.schemas import (
    Checkpoint,
    ReplayReport,
    ReplayRequest,
    RunOut,
    SessionDetail,
    SessionPage,
    SessionSummary,
    SessionTraceOut,
    camelize,
)
from persistence import repository as repo
from persistence.leases import SessionBusy
from runs.replay import StoreNotOpen

router = APIRouter(prefix="/api/sessions", tags=["sessions"], dependencies=Guarded)
ERRORS = responses(400, 401, 403, 404, 415, 422, 503)
Q_HELP = "text the question or the answer contains (case-insensitive)"
FROM_HELP = "created at or after: a date (2026-11-30, from 00:00 UTC) or an ISO date-time"
TO_HELP = "created at or before: a date (the whole day, UTC) or an ISO date-time"


def _summary(row: Any, cls: type[SessionSummary] = SessionSummary) -> Any:
    out = cls.model_validate(row)
    out.evidence_score = (row.self_evaluation or {}).get("evidence_score")
    return out


@router.get("", response_model=SessionPage, responses=ERRORS)
async def list_sessions(
    session: SessionDep,
    status: Annotated[str | None, Query(pattern="^(RUNNING|SUCCESS|FAILED)$")] = None,
    flow: Annotated[str | None, Query(pattern="^(CHAT|AI_OPS)$")] = None,
    origin: Annotated[
        str | None,
        Query(
            pattern="^(user|studio|replay|eval)$",
            description="who started the runs: user (console, HTTP), studio, replay, eval",
        ),
    ] = None,
    q: Annotated[str | None, Query(max_length=200, description=Q_HELP)] = None,
    created_from: Annotated[
        str | None, Query(alias="from", max_length=40, description=FROM_HELP)
    ] = None,
    created_to: Annotated[str | None, Query(alias="to", max_length=40, description=TO_HELP)] = None,
    page: Annotated[int, Query(ge=1, le=100000)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=200)] = 20,
) -> Any:
    start, end = day_range(created_from, created_to)
    result = await repo.list_sessions(
        session,
        status=status,
        flow=flow,
        origin=origin,
        text=(q or "").strip() or None,
        created_from=start,
        created_to=end,
        limit=page_size,
        offset=(page - 1) * page_size,
    )
    return SessionPage(
        items=[_summary(r) for r in result.items],
        total=result.total,
        page=page,
        page_size=page_size,
    )


@router.get("/{session_id}", response_model=SessionTraceOut, responses=ERRORS)
async def get_session(session: SessionDep, session_id: str) -> Any:
    """The session with every model step and tool call, as recorded."""
    trace = await repo.get_trace(session, session_id)
    if trace is None:
        raise ApiError(404, "session_not_found", f"session {session_id} does not exist")
    return SessionTraceOut(
        session=_summary(trace.session, SessionDetail),
        steps=trace.steps,
        invocations=trace.invocations,
    )


@router.get("/{session_id}/checkpoints", response_model=list[Checkpoint], responses=ERRORS)
async def checkpoints(replayer: ReplayerDep, session_id: str) -> Any:
    try:
        return await replayer.checkpoints(session_id)
    except LookupError as exc:
        raise ApiError(404, "session_not_found", str(exc)) from None


@router.post("/{session_id}/resume", response_model=RunOut, responses=ERRORS | responses(409))
async def resume(runner: RunnerDep, session_id: str) -> dict[str, Any]:
    """Continue a FAILED (interrupted) run from its last checkpoint — on any worker; the same
    session, with its retrieval memory, and without writing any step twice. 409
    ``session_running`` while it runs (one run per session), ``not_resumable`` when finished or
    when the conversation moved on."""
    try:
        result = await runner.resume(session_id)
    except LookupError as exc:
        raise ApiError(404, "session_not_found", str(exc)) from None
    except SessionBusy as exc:
        retry = {"Retry-After": str(exc.retry_after_s)}
        raise ApiError(409, "session_running", str(exc), retry) from None
    except ValueError as exc:
        raise ApiError(409, "not_resumable", str(exc)) from None
    return camelize(result.__dict__)


@router.post(
    "/{session_id}/replay",
    response_model=ReplayReport | RunOut,
    dependencies=JsonBody,
    responses=ERRORS,
)
async def replay(
    replayer: ReplayerDep, session_id: str, body: ReplayRequest | None = None
) -> dict[str, Any]:
    """``rerun``: replay with the recorded model outputs and report divergence; ``checkpoint``:
    continue from one of the session's checkpoints (time travel)."""
    body = body or ReplayRequest()
    try:
        if body.mode == "checkpoint":
            if not body.checkpoint_id:
                raise ApiError(
                    400,
                    "checkpoint_required",
                    "mode=checkpoint needs checkpointId (see /checkpoints)",
                )
            result = await replayer.from_checkpoint(session_id, body.checkpoint_id)
            return camelize(result.__dict__)
        return camelize(await replayer.rerun(session_id))
    except LookupError as exc:
        raise ApiError(404, "not_found", str(exc)) from None
    except StoreNotOpen as exc:
        raise ApiError(503, "store_unavailable", str(exc)) from None
