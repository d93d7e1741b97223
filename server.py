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

from api import errors
from api.admission import Admission
from api.boot import Boot
from api.hosts import HostAllowlist
from api.http_metrics import HttpMetrics
from api.limits import BodySizeLimit
from api.routes import (
    cases,
    chat,
    documents,
    evals,
    gaps,
    health,
    insights,
    knowledge,
    metrics,
    pages,
    sessions,
)
from api.security import SecurityMiddleware
from retrieval.l1.freed_memory import cap_heaps
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


def _lifespan(settings: Settings, services: Services | None, embeddings: Any = None) -> Any:
    """Listen at once; the services start (unless passed in) and the first import runs in the
    background (``api/boot.py``); everything started is stopped after."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.services = None
        boot = app.state.boot = Boot(
            app, settings, services, progress=_progress, embeddings=embeddings
        )
        boot.start()
        try:
            yield
        finally:
            await boot.stop()

    return lifespan


async def _timing(request: Request, call_next: Any) -> Any:
    t0 = time.perf_counter()
    response = await call_next(request)
    response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - t0) * 1000:.1f}"
    return response


def _install_middleware(app: FastAPI, settings: Settings) -> None:
    # The last one added runs first: cross-site requests are refused before anything is read.
    app.middleware("http")(_timing)
    app.add_middleware(
        BodySizeLimit,
        max_upload_bytes=settings.max_upload_mb * 1024 * 1024,
        max_body_bytes=settings.max_body_kb * 1024,
    )
    app.add_middleware(SecurityMiddleware, allowed_origins=settings.auth.allowed_origins)
    # Before the cross-site check: a rebound name passes that check (its Origin matches its Host).
    app.add_middleware(HostAllowlist, allowed=settings.allowed_hosts, bind_host=settings.host)
    app.add_middleware(HttpMetrics)  # outermost: refusals by the others are counted too


def _mount_routes(app: FastAPI) -> None:
    for module in (
        health,
        metrics,
        chat,
        knowledge,
        documents,
        sessions,
        cases,
        insights,
        gaps,
        evals,
        pages,
    ):
        app.include_router(module.router)
    app.mount("/static", pages.ConsoleAssets(), name="static")


# Loggers whose INFO lines read like errors at start-up: faiss' loader reports each instruction
# set it could not load ("… due to: ModuleNotFoundError …") before the one it loads.
QUIET_LOGGERS = ("faiss.loader", "faiss")


def _quiet() -> None:
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def create_app(
    settings: Settings | None = None, services: Services | None = None, *, embeddings: Any = None
) -> FastAPI:
    """``services`` may be passed in (tests share one started stack); otherwise they start here
    (with ``embeddings`` if given: tests share one loaded model)."""
    cap_heaps()  # before any thread exists: each would get a heap of its own
    settings = settings or (services.settings if services else get_settings())
    if not logging.getLogger().handlers:  # e.g. `uvicorn server:create_app --factory --workers 4`
        logging.basicConfig(level=settings.log_level, format=LOG_FORMAT)
    _quiet()
    app = FastAPI(
        title="SuperBiz Agent",
        version="0.1.0",
        description="AI-Ops / SRE assistant: chat and alert analysis over a hybrid knowledge base, with full run records.",
        lifespan=_lifespan(settings, services, embeddings),
    )
    app.state.settings = settings
    app.state.lookup_gate = Admission(
        settings.lookup_concurrency, settings.lookup_queue, settings.lookup_max_wait_s
    )
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
    app = create_app(settings)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=settings.log_level.lower())
    boot = getattr(app.state, "boot", None)
    if boot is not None and boot.phase == "failed":
        sys.exit(3)  # the services could not start (the log says why)


if __name__ == "__main__":
    main()
