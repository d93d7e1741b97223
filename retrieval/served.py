"""The running server, for the tools that work beside it (CLIs, LangGraph Studio).

Milvus Lite lets one process at a time open its data folder (an exclusive ``flock`` on
``<uri>/LOCK``; a second open raises ``DataDirLockedError``). While ``make serve`` holds it, a CLI
or Studio asks that server over its HTTP API instead of opening the files and failing; with no
server they open the files as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx

from retrieval.l1.milvus_lite import in_use_by_another_server
from settings import Settings


class ServerUnavailable(RuntimeError):
    """The data folder is held by another process and no server answers for it."""


class ServerRefused(RuntimeError):
    """The server answered with an error (its own message: unknown session, bad input, …)."""


@dataclass(frozen=True)
class Served:
    """The server on ``HOST:PORT`` (a wildcard bind is reached on the loopback)."""

    base_url: str
    headers: dict[str, str]
    where: str

    @classmethod
    def of(cls, settings: Settings) -> Served:
        host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
        headers = {"X-API-Key": settings.api_key} if settings.api_key else {}
        return cls(f"http://{host}:{settings.port}", headers, f"{settings.host}:{settings.port}")

    def request(
        self,
        method: str,
        path: str,
        *,
        timeout: float = 600,
        headers: dict[str, str] | None = None,
        **kw: Any,
    ) -> Any:
        """The JSON of a 2xx answer. No answer raises ServerUnavailable; an error answer raises
        ServerRefused with the server's own message (its error contract: ``{"error", "message"}``)."""
        try:
            r = httpx.request(
                method,
                self.base_url + path,
                headers=self.headers | (headers or {}),
                timeout=timeout,
                **kw,
            )
        except httpx.HTTPError as exc:
            raise ServerUnavailable(f"no server answered on {self.where}: {exc}") from None
        try:
            body = r.json()
        except ValueError:
            body = None
        if r.is_success and body is not None:
            return body
        message = body.get("message") if isinstance(body, dict) else None
        raise ServerRefused(
            f"the server on {self.where} answered {r.status_code}: {message or r.text[:300]}"
        )


def snake_keys(value: Any, opaque: frozenset[str] | set[str] = frozenset()) -> Any:
    """The API's camelCase keys back to Python names (``l0Titles`` → ``l0_titles``); the values of
    ``opaque`` keys (data-keyed maps) stay as they are."""
    if isinstance(value, dict):
        return {
            re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", k).lower(): (
                v if k in opaque else snake_keys(v, opaque)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [snake_keys(v, opaque) for v in value]
    return value


def held_by_server(settings: Settings) -> bool:
    """Whether this process must not open the Milvus Lite folder itself: another one holds it (a
    lock this process's own Milvus Lite holds does not count: Studio may have opened it already)."""
    return settings.milvus_kind == "milvus-lite" and in_use_by_another_server(settings.milvus_uri)


def held_message(settings: Settings, reason: str) -> str:
    return (
        f"{settings.milvus_uri} is a Milvus Lite folder, which one process at a time can open, and "
        f"another process has it open; {reason}. Start the server on HOST:PORT "
        f"({settings.host}:{settings.port}) or stop the process holding it and run this again"
    )
