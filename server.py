"""FastAPI application: HTTP API, SSE streams and the static console pages.

Run with ``python -m server`` (what ``make serve`` does) or ``uvicorn server:app``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI

from persistence.db import Database
from settings import Settings, get_settings

log = logging.getLogger("superbiz.server")


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        db = Database(settings.database_url)
        app.state.settings = settings
        app.state.db = db
        try:
            yield
        finally:
            await db.dispose()

    app = FastAPI(title="SuperBiz Agent", version="0.1.0", lifespan=lifespan)

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, Any]:
        db: Database = app.state.db
        db_ok = await db.ping()
        return {
            "status": "ok" if db_ok else "degraded",
            "database": {"kind": settings.database_kind, "ok": db_ok},
            "vector_store": {"kind": settings.milvus_kind, "uri": settings.milvus_uri},
            "chat_model": settings.chat_model_kind,
        }

    return app


def main() -> None:
    settings = get_settings()
    logging.basicConfig(
        level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
    )


if __name__ == "__main__":
    main()
