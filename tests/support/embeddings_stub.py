"""A local server speaking the OpenAI ``/v1/embeddings`` protocol, backed by a real local model.

It stands in for a hosted BGE-M3 / OpenAI endpoint: requests go over HTTP in the wire format
langchain-openai sends (float or base64 encoding), and the vectors are the default local model's
(as passages: a hosted endpoint embeds the texts it is sent).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from tests.support.threaded_server import ThreadedServer


@dataclass
class StubEmbeddings(ThreadedServer):
    model: Any  # an Embeddings object doing the real work
    name: str = "bge-m3-stub"
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/embeddings")
        async def embeddings(request: Request) -> Any:
            body = await request.json()
            self.requests.append(body)
            if body.get("model") != self.name:
                return JSONResponse(
                    {"error": {"message": f"model {body.get('model')!r} not found"}},
                    status_code=404,
                )
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            vectors = self.model.embed_documents([str(t) for t in texts])
            b64 = body.get("encoding_format") == "base64"
            data = [
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": base64.b64encode(
                        np.asarray(v, dtype=np.float32).tobytes()
                    ).decode()
                    if b64
                    else v,
                }
                for i, v in enumerate(vectors)
            ]
            tokens = sum(len(str(t).split()) for t in texts)
            return {
                "object": "list",
                "data": data,
                "model": self.name,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }

        return app
