"""One error contract for every endpoint: ``{"error": code, "message": text}`` with the right status.

User mistakes map to 4xx with a message saying how to fix them; an unreachable store is 503; only a
real fault is a 500, logged with the session id when there is one.

Below ``api/`` an error says what happened in domain terms: its ``code`` is its kind
(``document_not_found``, ``conversation_busy``, …). ``DOMAIN_STATUS`` is the one place a kind gets
its HTTP status, and one handler answers every domain error with it.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from starlette.exceptions import HTTPException

from persistence import dberrors
from persistence.conversations import ConversationBusy
from persistence.feedback import FeedbackError, SessionNotFound
from retrieval.l1.store import StoreUnavailable
from retrieval.writing.errors import KnowledgeError

log = logging.getLogger("superbiz.api")

# A domain error's kind → its HTTP status (the kinds are the ``code`` of the classes below).
DOMAIN_STATUS = {
    "bad_request": 400,
    "invalid_upload": 400,
    "invalid_feedback": 400,
    "document_not_found": 404,
    "session_not_found": 404,
    "document_exists": 409,
    "import_in_progress": 409,
    "conversation_busy": 409,
    "file_too_large": 413,
    "unsupported_file_type": 415,
    "invalid_document": 422,
    "invalid_chunk_params": 422,
    "vector_store_damaged": 503,
    "storage_full": 507,
}
# Raised below api/ with a ``code`` (and, when busy, ``retry_after_s``); subclasses included.
DOMAIN_ERRORS: tuple[type[Exception], ...] = (
    KnowledgeError,
    FeedbackError,
    SessionNotFound,
    ConversationBusy,
)

HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "too_many_requests",
    503: "service_unavailable",
    507: "storage_full",
}


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for the error codes an endpoint can return (the shared error body)."""
    from api.schemas import ErrorBody

    return {code: {"model": ErrorBody} for code in codes}


def event_stream(description: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for a 200 that is a Server-Sent Events stream."""
    return {200: {"description": description, "content": {"text/event-stream": {}}}}


class ApiError(Exception):
    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers


def error(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"error": code, "message": message}, status_code=status, headers=headers)


def database_code(kind: dberrors.DbFailure) -> str:
    """The error code of a 503 the database caused."""
    return (
        "database_read_only"
        if kind == dberrors.DbFailure.WRITES_REFUSED
        else "database_unavailable"
    )


def _json_error(e: dict[str, Any], doc: Any) -> str:
    """Where malformed JSON broke, in lines and columns (FastAPI reports a character offset)."""
    pos = next((p for p in e.get("loc", ())[1:] if isinstance(p, int)), None)
    reason = (e.get("ctx") or {}).get("error") or "not valid JSON"
    if pos is None or not isinstance(doc, str):
        return f"body: invalid JSON: {reason}"
    line = doc.count("\n", 0, pos) + 1
    column = pos - (doc.rfind("\n", 0, pos) + 1) + 1
    return f"body: invalid JSON at line {line} column {column}: {reason}"


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for e in exc.errors()[:5]:
        if e.get("type") == "json_invalid":
            parts.append(_json_error(e, exc.body))
            continue
        loc = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        parts.append(f"{loc}: {e.get('msg', 'invalid')}")
    return "; ".join(parts) or "the request does not match the schema; see /docs"


async def _fault(request: Request, exc: Exception) -> JSONResponse:
    session = request.path_params.get("session_id") or request.headers.get("x-session-id") or "-"
    log.exception(
        "unhandled error on %s %s (session %s)", request.method, request.url.path, session
    )
    return error(500, "internal_error", "an internal error occurred; it has been logged")


async def _domain(request: Request, exc: Exception) -> JSONResponse:
    """Every domain error: its kind as the code, the status its kind maps to, its message."""
    code = getattr(exc, "code", None)
    status = DOMAIN_STATUS.get(code) if isinstance(code, str) else None
    if status is None:  # a kind nobody mapped is a fault (tests/test_api_contract.py)
        return await _fault(request, exc)
    retry = getattr(exc, "retry_after_s", None)
    headers = {"Retry-After": str(retry)} if retry is not None else None
    return error(status, code, str(exc), headers)


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api(_: Request, exc: ApiError) -> JSONResponse:
        return error(exc.status, exc.code, exc.message, exc.headers)

    for cls in DOMAIN_ERRORS:
        app.add_exception_handler(cls, _domain)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error(422, "invalid_request", _validation_message(exc))

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> JSONResponse:
        code = HTTP_CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        return error(exc.status_code, code, message)

    @app.exception_handler(OperationalError)
    @app.exception_handler(InterfaceError)
    async def _db_down(request: Request, exc: DBAPIError) -> JSONResponse:
        log.warning("database unavailable on %s: %s", request.url.path, exc.orig)
        kind = dberrors.classify(exc) or dberrors.DbFailure.UNREACHABLE
        return error(503, database_code(kind), dberrors.MESSAGES[kind])

    @app.exception_handler(ConnectionError)
    async def _conn(request: Request, exc: ConnectionError) -> JSONResponse:
        log.warning("store unavailable on %s: %s", request.url.path, exc)  # raw text: log only
        which = "the vector store is" if isinstance(exc, StoreUnavailable) else "a backing store is"
        return error(
            503, "service_unavailable", f"{which} unreachable; retry shortly (see /healthz)"
        )

    app.add_exception_handler(Exception, _fault)
