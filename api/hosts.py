"""The Host allowlist: requests are served only under a name this server is meant to have.

DNS rebinding makes a hostile page's own name (``evil.example``) resolve to this server; the browser
then treats the page and this API as one origin, so ``Origin`` matches ``Host`` and the cross-site
check (``api/security.py``) lets it through. The ``Host`` header is the one thing the page cannot
choose: it is refused with 421 Misdirected Request unless it is a loopback name (``localhost``,
``*.localhost``, ``127.0.0.0/8``, ``::1``), the address the server binds to, or a name listed in
``allowed-hosts`` (env ``ALLOWED_HOSTS``; ``*.example.com`` covers its subdomains).

``GET /healthz`` and ``GET /metrics`` answer under any name: Kubernetes probes and Prometheus send
the pod's address as Host, and neither reveals runbooks or sessions.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

PROBES = frozenset({"/healthz", "/metrics"})
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::", "[::]"})


def host_name(header: str) -> str:
    """The name in a Host header, lower case, without its port (``[::1]:9900`` → ``::1``)."""
    value = header.strip().lower().rstrip(".")
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def is_loopback(name: str) -> bool:
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostPolicy:
    def __init__(self, allowed: Iterable[str], bind_host: str = "") -> None:
        names = {host_name(n) for n in allowed}
        if bind_host not in WILDCARD_BINDS:
            names.add(host_name(bind_host))
        self.exact = frozenset(n for n in names if not n.startswith("*."))
        self.suffixes = tuple(n[1:] for n in names if n.startswith("*."))

    def allows(self, header: str | None) -> bool:
        if header is None:  # HTTP/1.0 clients without Host are not browsers
            return True
        name = host_name(header)
        return (
            is_loopback(name)
            or name in self.exact
            or any(name.endswith(s) and len(name) > len(s) for s in self.suffixes)
        )


class HostAllowlist:
    """Pure ASGI, outside every other check: nothing is read for a refused name."""

    def __init__(self, app: ASGIApp, allowed: Iterable[str] = (), bind_host: str = "") -> None:
        self.app = app
        self.policy = HostPolicy(allowed, bind_host)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (
            scope["method"] in ("GET", "HEAD") and scope["path"] in PROBES
        ):
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("host")
        if self.policy.allows(header):
            await self.app(scope, receive, send)
            return
        message = (
            f"this server does not answer to the name {host_name(header or '')!r} (Host header); "
            "a page on another site may have pointed its own name at this address (DNS "
            "rebinding). If that is this server's public name, add it to allowed-hosts "
            "(env ALLOWED_HOSTS, comma-separated)"
        )
        body = json.dumps({"error": "misdirected_request", "message": message}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 421,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
