"""HTTP request metrics by route template, as a pure ASGI middleware.

The route label is the template (``/api/sessions/{session_id}``), never the raw path, so the number
of series stays bounded whatever clients send; a path no route serves is ``unmatched``.
prometheus-fastapi-instrumentator does the same but requires starlette < 1.0 (we run 1.x).
"""

from __future__ import annotations

import time
from typing import Any

from starlette.routing import Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from telemetry import metrics

UNMATCHED = "unmatched"


def _matching(routes: Any, scope: Scope) -> Any:
    """The route in ``routes`` that would serve ``scope`` (looking inside included routers)."""
    for candidate in routes or ():
        if candidate.matches(scope)[0] != Match.FULL:
            continue
        if getattr(candidate, "path", None) is not None:
            return candidate
        # FastAPI 0.165 wraps each included router; its routes carry the full paths.
        inner = getattr(getattr(candidate, "original_router", None), "routes", None)
        return _matching(inner, scope)
    return None


def route_template(scope: Scope) -> str:
    """The template of the route that served (or would have served) this request."""
    route = scope.get("route")  # set by the router once it matched
    if route is None:  # answered before routing (e.g. a 403 or 413 from another middleware)
        route = _matching(getattr(scope.get("app"), "routes", None), scope)
    path = getattr(route, "path", None)
    if path is None:
        return UNMATCHED
    return f"{path}/{{path}}" if isinstance(route, Mount) else path


class HttpMetrics:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = 500  # what the server sends when the app fails before answering

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            metrics.record_http(
                scope["method"], route_template(scope), status, time.perf_counter() - t0
            )
