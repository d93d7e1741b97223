"""Knowledge base: import (background job with progress), stats, the retrieval test, domains."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Query, Request
from sse_starlette import EventSourceResponse

from api.deps import Guarded, JobsDep, JsonBody, KnowledgeDep, ServicesDep
from api.errors import ApiError, event_stream, responses
from api.schemas import DomainOut, JobOut, LookupKnobOut, LookupRequest, LookupResponse, camelize
from api.status_schemas import KnowledgeStats
from retrieval.lookup import knobs
from retrieval.lookup.alert_input import AlertInput

router = APIRouter(prefix="/api", tags=["knowledge"], dependencies=Guarded)
ERRORS = responses(401, 403, 404, 409, 415, 422, 503)
SSE = event_stream("Server-Sent Events: progress, then done (each with the job as JSON)")


@router.post("/knowledge/init", status_code=202, response_model=JobOut, responses=ERRORS)
async def init(
    kb: KnowledgeDep,
    jobs: JobsDep,
    force: bool = Query(False, description="re-import unchanged files too"),
) -> Any:
    """Start importing the knowledge-base folder; follow it at ``/api/knowledge/jobs/{jobId}``."""
    await kb.ingestion.ensure_writable()  # refused before a job starts, not in it
    return jobs.start(force).view()


@router.get("/knowledge/jobs/{job_id}", response_model=JobOut, responses=ERRORS)
async def job(jobs: JobsDep, job_id: str) -> Any:
    found = jobs.jobs.get(job_id)
    if found is None:
        raise ApiError(
            404,
            "job_not_found",
            f"import job {job_id} is unknown (jobs are kept per server process)",
        )
    return found.view()


@router.get(
    "/knowledge/jobs/{job_id}/events",
    response_class=EventSourceResponse,
    responses=ERRORS | SSE,
)
async def job_events(jobs: JobsDep, job_id: str) -> EventSourceResponse:
    """The job's progress as Server-Sent Events until it ends."""
    found = jobs.jobs.get(job_id)
    if found is None:
        raise ApiError(404, "job_not_found", f"import job {job_id} is unknown")

    async def gen() -> AsyncIterator[dict[str, str]]:
        while True:
            found.changed.clear()
            data = json.dumps(camelize(found.view()), ensure_ascii=False)
            if found.status != "running":
                yield {"event": "done", "data": data}
                return
            yield {"event": "progress", "data": data}
            with contextlib.suppress(TimeoutError):  # a quiet import still gets a heartbeat
                await asyncio.wait_for(found.changed.wait(), timeout=15)

    return EventSourceResponse(gen())


@router.get(
    "/knowledge/stats",
    response_model=KnowledgeStats,
    response_model_exclude_unset=True,
    responses=ERRORS,
)
async def stats(kb: KnowledgeDep, jobs: JobsDep) -> Any:
    """Documents, vectors, per category and per status, and the running import job if any."""
    running = jobs.running()
    return camelize(await kb.stats() | {"job": running.view() if running else None})


@router.post(
    "/knowledge/lookup", response_model=LookupResponse, dependencies=JsonBody, responses=ERRORS
)
async def lookup(body: LookupRequest, services: ServicesDep, request: Request) -> dict[str, Any]:
    """Hit testing: one lookup with a fresh session memory, showing what the model would see and
    every raw score (L0 matches, dense / BM25 / RRF per hit). The optional fields override the
    server's retrieval settings for this request only; ``settings`` says what it ran with. Under
    overload: 503 ``overloaded`` with ``Retry-After`` (``api/admission.py``)."""
    wanted = knobs.LookupKnobs.of(body)
    config = knobs.apply(services.kb.lookup_service.config, wanted)
    if config.thresholds.reference > config.thresholds.highly_relevant:
        raise ApiError(
            422,
            "invalid_request",
            f"referenceThreshold ({config.thresholds.reference}) must not exceed "
            f"highlyRelevantThreshold ({config.thresholds.highly_relevant}); lower the first or "
            "raise the second",
        )
    alert = AlertInput.parse(body.alert.model_dump()) if body.alert else None
    async with request.app.state.lookup_gate.slot():
        outcome = await services.kb.alookup(body.query, config=config, alert=alert)
    settings = knobs.effective(config, wanted)
    return {"result": outcome.payload, "scores": camelize(outcome.artifact), "settings": settings}


@router.get("/knowledge/lookup/knobs", response_model=list[LookupKnobOut], responses=ERRORS)
async def lookup_knobs(services: ServicesDep) -> Any:
    """The retrieval test's knobs (the optional fields of ``POST /api/knowledge/lookup``): name,
    label, type and bounds, and the value this server runs with. The retrieval page draws its
    controls from it."""
    return knobs.describe(services.kb.lookup_service.config)


@router.get("/domains", response_model=list[DomainOut], responses=ERRORS)
async def domains(services: ServicesDep) -> Any:
    return await services.domains.rows()
