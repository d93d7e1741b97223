"""Cross-site protection and security headers, for every request and response.

The server usually listens on an operator's machine or an intranet, where any web page the operator
opens can make the browser send it a form POST (``no-cors`` needs no permission). Browsers label
such requests with ``Origin`` and ``Sec-Fetch-Site``; a changing request (POST, PUT, PATCH, DELETE)
from another site is refused with 403 unless that site is listed in ``auth.allowed-origins``.
Non-browser clients (curl, httpx, scripts) send neither header and are unaffected.

Every response carries a Content-Security-Policy (scripts and styles from this server only, no
framing), ``X-Frame-Options: DENY`` and ``X-Content-Type-Options: nosniff``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
# FastAPI's /docs and /redoc pages load Swagger UI / ReDoc from a CDN and start it with an inline
# script; they show the schema only, so they get a wider policy of their own.
DOCS_PATHS = ("/docs", "/redoc")
DOCS_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
    "style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net https://fonts.googleapis.com; "
    "font-src https://fonts.gstatic.com; img-src 'self' data: https:; worker-src blob:; "
    "connect-src 'self'; object-src 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
FIX = (
    "If that site should be able to change data here, add it to auth.allowed-origins "
    "(env AUTH__ALLOWED_ORIGINS)"
)


def _origin_host(origin: str) -> str:
    return (urlsplit(origin).netloc or "").lower()


def cross_site_refusal(headers: Mapping[str, str], allowed: Iterable[str]) -> str | None:
    """Why a changing request must be refused as cross-site, or None when it may go on."""
    origin = (headers.get("origin") or "").strip().lower().rstrip("/")
    fetch_site = (headers.get("sec-fetch-site") or "").lower()
    if origin and origin != "null":
        if origin in allowed:
            return None
        # The browser cannot forge either header; a reverse proxy may rewrite Host and keep the
        # original in X-Forwarded-Host (a page on another site cannot add that header).
        hosts = {
            (headers.get("host") or "").lower(),
            (headers.get("x-forwarded-host") or "").split(",")[0].strip().lower(),
        }
        if _origin_host(origin) in hosts - {""}:
            return None
        here = headers.get("host") or "this server"
        return f"a page on {origin} tried to change data on {here}; refused. {FIX}"
    if origin == "null":
        return (
            "a page without an origin (a sandboxed frame or a local file) tried to change data "
            "here; refused. Use the console served by this server, or call the API directly"
        )
    if fetch_site in ("cross-site", "same-site"):
        return f"a request from another site tried to change data here; refused. {FIX}"
    return None


class SecurityMiddleware:
    """Pure ASGI (it must not buffer Server-Sent Events as ``BaseHTTPMiddleware`` would)."""

    def __init__(self, app: ASGIApp, allowed_origins: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed = frozenset(allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        csp = DOCS_CSP if scope["path"].startswith(DOCS_PATHS) else CSP

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["Content-Security-Policy"] = csp
                for name, value in HEADERS.items():
                    headers[name] = value
            await send(message)

        if scope["method"] not in SAFE_METHODS:
            reason = cross_site_refusal(Headers(scope=scope), self.allowed)
            if reason is not None:
                await self._refuse(reason, send_secured)
                return
        await self.app(scope, receive, send_secured)

    @staticmethod
    async def _refuse(reason: str, send: Send) -> None:
        body = json.dumps({"error": "cross_site_request", "message": reason}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
