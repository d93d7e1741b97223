"""``/healthz``: is the service usable, and which stores is it running on."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from api.schemas import camelize
from api.status_schemas import Health

router = APIRouter(tags=["ops"])
NOT_OK = "starting, failed, or the database unreachable or refusing writes"


@router.get(
    "/healthz",
    response_model=Health,
    response_model_exclude_unset=True,
    responses={503: {"model": Health, "description": NOT_OK}},
)
async def healthz(request: Request, response: Response) -> Any:
    """Store status: database, vector store, chat model, documents. 503 while the database is
    unreachable or refuses writes (runs would fail; a read-only file or a full disk still answers
    reads, so writes are probed); 200 "degraded" when the vector store is unusable (L0 still works)
    or the knowledge base's stores disagree in a way the last check could not repair; 503
    "starting" until the services are up; 200 "importing" while the first import runs, the
    start-up recovery re-imports what a crash interrupted, or a vector store whose files were
    damaged is rebuilt from the documents ("repairing the vector store", with ``repair``)."""
    settings = request.app.state.settings
    svc = getattr(request.app.state, "services", None)
    boot = getattr(request.app.state, "boot", None)
    start = boot.health() if boot is not None else {}
    if svc is None:
        response.status_code = 503
        return _not_serving(start)
    reachable = await svc.db.ping()
    write_failure = await svc.db.write_failure() if reachable else None
    db_ok = reachable and write_failure is None
    vectors_ok, problems = await svc.kb.recovery.health()
    rebuild = svc.kb.recovery.rebuild  # a damaged vector store set aside, rebuilt from the docs
    importing = start.get("phase") == "importing" or rebuild.active
    body = {
        "status": "degraded" if not db_ok or problems else ("importing" if importing else "ok"),
        "database": {
            "kind": settings.database_kind,
            "ok": db_ok,
            "reachable": reachable,
            "writable": db_ok,
        },
        "vectorStore": {"kind": settings.milvus_kind, "ok": vectors_ok},
        "chatModel": settings.chat_model_kind,
        "documents": len(svc.kb.catalog),
        "knowledgeVersion": svc.kb.catalog.version,
        "problems": problems,  # what is wrong with the knowledge base and what to do, in words
    }
    if importing and "import" in start:
        body["import"] = start["import"]  # the first import's job: per file, per chunk batch
        body["message"] = (
            "re-importing the documents an interrupted import left unfinished"
            if start["import"].get("recovery")
            else "first import of the knowledge base running"
        ) + ": lookups answer from the documents indexed so far"
    if rebuild.active:
        body["repair"] = camelize(rebuild.view())
        body["message"] = rebuild.message()
    if not reachable:
        body["message"] = "the database is unreachable; requests get 503 until it is back"
    elif write_failure:
        body["message"] = f"{write_failure}; runs and uploads get 503 until then"
    response.status_code = 200 if db_ok else 503
    return body


def _not_serving(start: dict) -> dict:
    if start.get("phase") == "failed":
        return {
            "status": "failed",
            "message": f"the service could not start: {start.get('error')}; the server stops",
        }
    return {
        "status": "starting",
        "message": "migrating the database, loading the embedding model and opening the vector "
        "store; retry in a few seconds",
        "timeline": start.get("timeline", {}),
    }
