"""``/healthz``: is the service usable, and which stores is it running on."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

router = APIRouter(tags=["ops"])


@router.get("/healthz")
async def healthz(request: Request) -> JSONResponse:
    """Store status: database, vector store, chat model, documents. 503 while the database is
    unreachable or refuses writes (runs would fail; a read-only file or a full disk still answers
    reads, so writes are probed); 200 "degraded" when only the vector store is (L0 still works)."""
    settings = request.app.state.settings
    svc = getattr(request.app.state, "services", None)
    if svc is None:
        return JSONResponse({"status": "starting"}, status_code=503)
    reachable = await svc.db.ping()
    write_failure = await svc.db.write_failure() if reachable else None
    db_ok = reachable and write_failure is None
    try:
        vectors_ok = await asyncio.wait_for(asyncio.to_thread(svc.kb.store.exists), timeout=3)
    except Exception:
        vectors_ok = False
    body = {
        "status": "ok" if db_ok and vectors_ok else "degraded",
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
    }
    if not reachable:
        body["message"] = "the database is unreachable; requests get 503 until it is back"
    elif write_failure:
        body["message"] = f"{write_failure}; runs and uploads get 503 until then"
    return JSONResponse(body, status_code=200 if db_ok else 503)
