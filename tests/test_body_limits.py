"""Request bodies are bounded on every route (MAX_BODY_KB; uploads keep MAX_UPLOAD_MB): an oversized
JSON body is refused with 413 before it is read whole, whether it declares its length or streams
without one."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.support.hostile import assert_error

MB = 1024 * 1024


class Body:
    """A JSON body streamed in 1 MB pieces without Content-Length, counting what was pulled."""

    def __init__(self, total: int) -> None:
        self.total, self.pulled = total, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b'{"question": "'
        while self.pulled < self.total:
            self.pulled += MB
            yield b"x" * MB
        yield b'"}'


@pytest.mark.parametrize(
    "path", ["/api/chat", "/api/knowledge/lookup", "/api/feedback", "/api/sessions/x/replay"]
)
async def test_oversized_json_is_413_before_it_is_read(
    client: httpx.AsyncClient, path: str
) -> None:
    big = b'{"question": "' + b"x" * (20 * MB) + b'"}'
    r = await client.post(path, content=big, headers={"content-type": "application/json"})
    message = assert_error(r, 413, "body_too_large")
    assert "MAX_BODY_KB" in message and "KB" in message


async def test_a_300_mb_streamed_body_is_cut_off(client: httpx.AsyncClient) -> None:
    body = Body(300 * MB)
    r = await client.post(
        "/api/chat",
        content=body,
        headers={"content-type": "application/json"},  # type: ignore[arg-type]
    )
    assert_error(r, 413, "body_too_large")
    assert body.pulled <= 4 * MB, body.pulled  # a bounded prefix was read, not 300 MB


async def test_bodies_within_the_limit_still_work(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/knowledge/lookup", json={"query": "ERR_TIMEOUT " + "x" * 1500})
    assert r.status_code == 200, r.text
