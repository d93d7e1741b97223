"""Reject an oversized request body before it is read whole, on every route.

Uploads (``/api/documents/upload``) are limited by ``MAX_UPLOAD_MB``; every other body (JSON) by
``MAX_BODY_KB``. The declared ``Content-Length`` is checked first; a body without one (chunked) is
counted as it streams and cut off at the limit. Either way the client gets 413 with the JSON error
contract, and the app never holds more than about the limit.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MULTIPART_OVERHEAD = 64 * 1024  # form boundaries and the small fields around the file
UPLOAD_PATHS = ("/api/documents/upload",)


def _too_large(code: str, message: str) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    body = json.dumps({"error": code, "message": message}).encode()
    return body, [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]


class BodySizeLimit:
    def __init__(
        self,
        app: ASGIApp,
        max_upload_bytes: int,
        max_body_bytes: int,
        upload_paths: tuple[str, ...] = UPLOAD_PATHS,
    ) -> None:
        self.app, self.upload_paths = app, upload_paths
        self.max_upload, self.max_body = max_upload_bytes, max_body_bytes

    def _limit(self, path: str) -> tuple[int, str, str]:
        if path in self.upload_paths:
            mb = self.max_upload // (1024 * 1024)
            return (
                self.max_upload + MULTIPART_OVERHEAD,
                "file_too_large",
                f"uploads are limited to {mb} MB (MAX_UPLOAD_MB); send a smaller file",
            )
        kb = self.max_body // 1024
        return (
            self.max_body,
            "body_too_large",
            f"request bodies are limited to {kb} KB (MAX_BODY_KB); send less (a question, a "
            "lookup or an alert is far smaller), or upload documents as files",
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, code, text = self._limit(scope["path"])

        async def reject() -> None:
            body, headers = _too_large(code, text)
            await send({"type": "http.response.start", "status": 413, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await reject()
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
                    await reject()
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: dict[str, Any]) -> None:
            if not rejected:
                await send(message)

        await self.app(scope, counting_receive, guarded_send)
