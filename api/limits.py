"""Reject an oversized upload before it is read whole.

The declared ``Content-Length`` is checked first; a body without one (chunked) is counted as it
streams and cut off at the limit. Either way the client gets 413 with the JSON error contract.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MULTIPART_OVERHEAD = 64 * 1024  # form boundaries and the small fields around the file


class UploadSizeLimit:
    def __init__(
        self, app: ASGIApp, max_bytes: int, paths: tuple[str, ...] = ("/api/documents/upload",)
    ) -> None:
        self.app, self.max_bytes, self.paths = app, max_bytes, paths

    def _message(self) -> bytes:
        mb = self.max_bytes // (1024 * 1024)
        body = {
            "error": "file_too_large",
            "message": f"uploads are limited to {mb} MB (MAX_UPLOAD_MB); send a smaller file",
        }
        return json.dumps(body).encode()

    async def _reject(self, send: Send) -> None:
        body = self._message()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes + MULTIPART_OVERHEAD
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._reject(send)
            return
        seen = 0
        rejected = False

        async def counting_receive() -> Message:
            nonlocal seen, rejected
            if rejected:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    # Answer now and make the app stop reading; whatever it sends later is dropped.
                    rejected = True
                    await self._reject(send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: dict[str, Any]) -> None:
            if not rejected:
                await send(message)

        await self.app(scope, counting_receive, guarded_send)
