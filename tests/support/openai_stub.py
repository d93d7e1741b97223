"""A local server speaking the OpenAI chat-completions protocol, for driving ``ChatOpenAI``.

Its "brain" is the offline model's role logic, chosen from the tools a request offers, so whole
graph runs go over the real wire format (tool calls, tool results, usage, streaming). ``fail_next``
makes the next N requests answer HTTP 500 or hang, for retry and time-out tests.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from llm.offline.roles import respond
from llm.offline.text import estimate_tokens
from tests.support.threaded_server import ThreadedServer

ROLE_BY_TOOL = {
    "Route": "supervisor",
    "Plan": "planner",
    "DocumentFields": "enricher",
    "DomainSummary": "domain_summary",
}


def _to_messages(raw: list[dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for m in raw:
        content = m.get("content") or ""
        if m["role"] == "system":
            out.append(SystemMessage(content))
        elif m["role"] == "user":
            out.append(HumanMessage(content))
        elif m["role"] == "assistant":
            calls = [
                {
                    "name": tc["function"]["name"],
                    "args": json.loads(tc["function"]["arguments"] or "{}"),
                    "id": tc["id"],
                }
                for tc in m.get("tool_calls") or []
            ]
            out.append(AIMessage(content=content, tool_calls=calls))
        elif m["role"] == "tool":
            out.append(ToolMessage(content=content, tool_call_id=m["tool_call_id"]))
    return out


def _role(body: dict[str, Any]) -> tuple[str, set[str]]:
    tools = {t["function"]["name"] for t in body.get("tools") or []}
    for name, role in ROLE_BY_TOOL.items():
        if name in tools:
            return role, tools
    if "lookup_knowledge" in tools:
        system = next((m.get("content", "") for m in body["messages"] if m["role"] == "system"), "")
        return ("executor" if "执行者" in system else "assistant"), tools
    return "answer", tools


@dataclass
class StubLLM(ThreadedServer):
    requests: list[dict[str, Any]] = field(default_factory=list)
    usages: list[dict[str, Any]] = field(default_factory=list)  # the usage each answer reported
    fail_next: int = 0
    fail_mode: str = "500"  # "500" or "hang"
    fail_from: int = 0  # 1-based request number from which ``fail_next`` applies (0 = the next one)
    delay_s: float = 0.0  # added to every answer, to keep runs in flight
    port: int = 0

    def fail(self, count: int, *, after: int = 0, mode: str = "500") -> None:
        """Fail ``count`` requests, starting ``after`` requests from now."""
        self.fail_next, self.fail_mode, self.fail_from = count, mode, len(self.requests) + after + 1

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        role, tools = _role(body)
        msg = respond(role, _to_messages(body["messages"]), tools)
        prompt_tokens = estimate_tokens(json.dumps(body["messages"], ensure_ascii=False))
        completion_tokens = estimate_tokens(
            msg.content if isinstance(msg.content, str) else ""
        ) + 5 * len(msg.tool_calls)
        message: dict[str, Any] = {"role": "assistant", "content": msg.content or None}
        if msg.tool_calls:
            message["tool_calls"] = [
                {
                    "id": tc["id"],
                    "type": "function",
                    "function": {
                        "name": tc["name"],
                        "arguments": json.dumps(tc["args"], ensure_ascii=False),
                    },
                }
                for tc in msg.tool_calls
            ]
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "stub"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if msg.tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def completions(request: Request) -> Any:
            body = await request.json()
            self.requests.append(body)
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if self.fail_next > 0 and len(self.requests) >= self.fail_from:
                self.fail_next -= 1
                if self.fail_mode == "hang":
                    await asyncio.sleep(30)
                return JSONResponse(
                    {"error": {"message": "stub failure", "type": "server_error"}}, status_code=500
                )
            full = self.reply(body)
            self.usages.append(full["usage"])
            if not body.get("stream"):
                return full
            return StreamingResponse(self._sse(full), media_type="text/event-stream")

        return app

    async def _sse(self, full: dict[str, Any]):  # noqa: ANN202 - async generator of SSE lines
        base = {k: full[k] for k in ("id", "created", "model")} | {
            "object": "chat.completion.chunk"
        }
        msg = full["choices"][0]["message"]
        text = msg.get("content") or ""
        for i in range(0, len(text), 8):
            yield (
                "data: "
                + json.dumps(
                    base
                    | {
                        "choices": [
                            {
                                "index": 0,
                                "delta": {"content": text[i : i + 8]},
                                "finish_reason": None,
                            }
                        ]
                    },
                    ensure_ascii=False,
                )
                + "\n\n"
            )
        for n, tc in enumerate(msg.get("tool_calls") or []):
            delta = {
                "tool_calls": [
                    {"index": n, "id": tc["id"], "type": "function", "function": tc["function"]}
                ]
            }
            yield (
                "data: "
                + json.dumps(
                    base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                    ensure_ascii=False,
                )
                + "\n\n"
            )
        yield (
            "data: "
            + json.dumps(
                base
                | {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {},
                            "finish_reason": full["choices"][0]["finish_reason"],
                        }
                    ]
                }
            )
            + "\n\n"
        )
        yield "data: " + json.dumps(base | {"choices": [], "usage": full["usage"]}) + "\n\n"
        yield "data: [DONE]\n\n"
