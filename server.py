"""FastAPI application: HTTP API, Server-Sent Events and the static console pages.

Run with ``python -m server`` (what ``make serve`` does) or ``uvicorn server:create_app --factory``.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.staticfiles import StaticFiles

from api import errors
from api.http_metrics import HttpMetrics
from api.jobs import JobRegistry
from api.limits import UploadSizeLimit
from api.routes import (
    cases,
    chat,
    documents,
    health,
    insights,
    knowledge,
    metrics,
    pages,
    sessions,
)
from api.security import SecurityMiddleware
from retrieval.collection_model import EmbeddingMismatch
from services import Services
from settings import Settings, SettingsError, get_settings

log = logging.getLogger("superbiz.server")
LOG_FORMAT = "%(asctime)s %(levelname)s %(process)d %(name)s %(message)s"


def _progress(event: dict[str, Any]) -> None:
    if event["event"] == "start":
        log.info("first start: importing %s knowledge-base file(s)", event["total"])
    elif event["event"] == "file" and event["status"] != "PROCESSING":
        log.info(
            "[%s/%s] %s %s %s",
            event["index"],
            event["total"],
            event["status"],
            event["file"],
            event.get("error") or "",
        )


def _lifespan(settings: Settings, services: Services | None) -> Any:
    """Start the services (unless passed in), the runner and the import jobs; stop them after."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = services is None
        try:
            svc = services or await Services.start(settings, progress=_progress)
        except EmbeddingMismatch as exc:  # a configuration problem: say it plainly, then stop
            log.error("cannot start: %s", exc)
            raise
        app.state.services = svc
        app.state.runner = svc.runner()
        app.state.jobs = JobRegistry(svc.kb.ingestion)
        sweeper = svc.sweeper().start()  # a dead worker's sessions become resumable, not RUNNING
        # Interrupted imports and stores out of step are repaired (or reported) while it runs.
        checks = svc.kb.recovery.start(settings.knowledge_check_seconds)
        log.info(
            "SuperBiz Agent ready on http://%s:%s (database=%s, vectors=%s, model=%s)",
            settings.host,
            settings.port,
            settings.database_kind,
            settings.milvus_kind,
            settings.chat_model_kind,
        )
        try:
            yield
        finally:
            await checks.stop()
            await sweeper.stop()
            await app.state.jobs.close()
            await app.state.runner.drain()
            if owned:
                await svc.close()

    return lifespan


async def _timing(request: Request, call_next: Any) -> Any:
    t0 = time.perf_counter()
    response = await call_next(request)
    response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - t0) * 1000:.1f}"
    return response


def _install_middleware(app: FastAPI, settings: Settings) -> None:
    # The last one added runs first: cross-site requests are refused before anything is read.
    app.middleware("http")(_timing)
    app.add_middleware(UploadSizeLimit, max_bytes=settings.max_upload_mb * 1024 * 1024)
    app.add_middleware(SecurityMiddleware, allowed_origins=settings.auth.allowed_origins)
    app.add_middleware(HttpMetrics)  # outermost: refusals by the others are counted too


def _mount_routes(app: FastAPI) -> None:
    for module in (health, metrics, chat, knowledge, documents, sessions, cases, insights, pages):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=pages.WEB_DIR, check_dir=False), name="static")


def create_app(settings: Settings | None = None, services: Services | None = None) -> FastAPI:
    """``services`` may be passed in (tests share one started stack); otherwise they start here."""
    settings = settings or (services.settings if services else get_settings())
    if not logging.getLogger().handlers:  # e.g. `uvicorn server:create_app --factory --workers 4`
        logging.basicConfig(level=settings.log_level, format=LOG_FORMAT)
    app = FastAPI(
        title="SuperBiz Agent",
        version="0.1.0",
        description="AI-Ops / SRE assistant: chat and alert analysis over a hybrid knowledge base, with full run records.",
        lifespan=_lifespan(settings, services),
    )
    app.state.settings = settings
    errors.install(app)
    _install_middleware(app, settings)
    _mount_routes(app)
    return app


def main() -> None:
    try:
        settings = get_settings()
    except SettingsError as exc:
        print(exc, file=sys.stderr)
        sys.exit(2)
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
