"""``/healthz``: is the service usable, and which stores is it running on."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

router = APIRouter(tags=["ops"])


@router.get("/healthz")
async def healthz(request: Request) -> JSONResponse:
    """Store status: database, vector store, chat model, documents. 503 while the database is
    unreachable (requests would fail); 200 "degraded" when only the vector store is (L0 still works)."""
    settings = request.app.state.settings
    svc = getattr(request.app.state, "services", None)
    if svc is None:
        return JSONResponse({"status": "starting"}, status_code=503)
    db_ok = await svc.db.ping()
    try:
        vectors_ok = await asyncio.wait_for(asyncio.to_thread(svc.kb.store.exists), timeout=3)
    except Exception:
        vectors_ok = False
    body = {
        "status": "ok" if db_ok and vectors_ok else "degraded",
        "database": {"kind": settings.database_kind, "ok": db_ok},
        "vectorStore": {"kind": settings.milvus_kind, "ok": vectors_ok},
        "chatModel": settings.chat_model_kind,
        "documents": len(svc.kb.catalog),
        "knowledgeVersion": svc.kb.catalog.version,
    }
    if not db_ok:
        body["message"] = "the database is unreachable; requests get 503 until it is back"
    return JSONResponse(body, status_code=200 if db_ok else 503)
