"""An app served in-process, and a background job held still while a test looks at it serving."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx


class HeldEmbeddings:
    """The session's model, whose document embedding waits until ``release`` is set."""

    def __init__(self, inner: Any) -> None:
        self._inner, self.release, self.waiting = inner, threading.Event(), threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.waiting.set()
        assert self.release.wait(300), "the test never released the embedding"
        return self._inner.embed_documents(texts)


async def health_until(client: httpx.AsyncClient, want: set[str], timeout: float = 300) -> dict:
    """Poll ``/healthz`` until its status is one of ``want``; its body."""
    deadline, body = time.monotonic() + timeout, {}
    while time.monotonic() < deadline:
        r = await client.get("/healthz")
        body = r.json()
        if body.get("status") in want:
            return body
        await asyncio.sleep(0.2)
    raise AssertionError(f"/healthz never said {want}: {body}")


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    """The app started (its lifespan: the real background boot unless it was given services) and
    an httpx client on it."""
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test", timeout=120
        ) as client,
    ):
        yield client
