"""Chat and AI-Ops runs (plain and streamed as Server-Sent Events) and feedback."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Header
from sse_starlette import EventSourceResponse

from api.deps import Guarded, JsonBody, RunnerDep, ServicesDep
from api.errors import ApiError, database_code, event_stream, responses
from api.schemas import (
    AiOpsRequest,
    ChatRequest,
    ChatResponse,
    FeedbackRequest,
    FeedbackResponse,
)
from graph.aiops import AIOPS_TASK
from persistence import dberrors
from persistence.feedback import submit_feedback
from persistence.models import SessionOrigin

router = APIRouter(prefix="/api", tags=["chat"], dependencies=Guarded)
ERRORS = responses(400, 401, 403, 404, 409, 415, 422, 503)  # 409: conversation_busy
# LangGraph Studio beside this server sends its runs here (graph/served_graph.py); they are
# recorded as Studio runs. Any other value is an ordinary user run.
OriginHeader = Header(None, alias="X-Session-Origin", include_in_schema=False)
SSE = event_stream(
    "Server-Sent Events, one per step of the run (the event's name is its type, its data a JSON "
    "object), ending with done or error"
)


def _origin(value: str | None) -> str | None:
    return SessionOrigin.STUDIO if value == SessionOrigin.STUDIO else None


def _sse(events: AsyncIterator[dict[str, Any]]) -> EventSourceResponse:
    async def gen() -> AsyncIterator[dict[str, str]]:
        async for event in events:
            yield {
                "event": event["type"],
                "data": json.dumps(event, ensure_ascii=False, default=str),
            }

    return EventSourceResponse(
        gen(), headers={"X-Accel-Buffering": "no", "Cache-Control": "no-cache"}
    )


@router.post("/chat", response_model=ChatResponse, dependencies=JsonBody, responses=ERRORS)
async def chat(
    body: ChatRequest, runner: RunnerDep, origin: str | None = OriginHeader
) -> ChatResponse:
    """Answer one question; the same ``id`` continues a conversation."""
    result = await runner.run(
        body.question, flow="CHAT", thread_id=body.id or uuid.uuid4().hex, origin=_origin(origin)
    )
    if result.status != "SUCCESS":
        if kind := dberrors.named_in(result.error):  # the database went away during the turn
            raise ApiError(
                503,
                database_code(kind),
                f"the run failed: {result.error} (session {result.session_id}: its record is "
                "closed once the database is back, and it can be resumed then)",
            )
        raise ApiError(
            502, "run_failed", f"the run failed: {result.error} (session {result.session_id})"
        )
    return ChatResponse(
        answer=result.answer or "", session_id=result.session_id, thread_id=result.thread_id
    )


@router.post(
    "/chat_stream",
    response_class=EventSourceResponse,
    dependencies=JsonBody,
    responses=ERRORS | SSE,
)
async def chat_stream(body: ChatRequest, runner: RunnerDep) -> EventSourceResponse:
    """The same run as ``/api/chat``, streamed: session, node, tool_call, tool_result, token, answer,
    then done or error. The session is created before the stream starts: a database that refuses
    it answers 503, not an empty stream."""
    run = await runner.open(body.question, flow="CHAT", thread_id=body.id or uuid.uuid4().hex)
    return _sse(runner.events(run))


@router.post(
    "/ai_ops",
    response_class=EventSourceResponse,
    dependencies=JsonBody,
    responses=ERRORS | SSE,
)
async def ai_ops(
    runner: RunnerDep, body: AiOpsRequest | None = None, origin: str | None = OriginHeader
) -> EventSourceResponse:
    """Analyse the active alerts; streams the run and ends with the Markdown report."""
    thread = (body.id if body else None) or uuid.uuid4().hex
    run = await runner.open(AIOPS_TASK, flow="AI_OPS", thread_id=thread, origin=_origin(origin))
    return _sse(runner.events(run))


@router.post("/feedback", response_model=FeedbackResponse, dependencies=JsonBody, responses=ERRORS)
async def feedback(body: FeedbackRequest, services: ServicesDep) -> FeedbackResponse:
    """``useful`` files the session into the case library (once); ``not_useful`` only records it."""
    result = await submit_feedback(services.db, body.session_id, body.feedback)
    return FeedbackResponse(success=result.success, message=result.message, case_id=result.case_id)
