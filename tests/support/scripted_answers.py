"""A hosted model whose final answers are scripted, over the OpenAI protocol.

Every tool-calling step goes as the offline policy decides (``StubLLM``), so the run looks things
up and reads its world like any run; only the text the user gets — the simple assistant's last
message or the answer node's — is replaced by ``answer``. A request offering the ``Judgement`` tool
(the eval suite's LLM judge) is answered with ``judge_score``. So a test can put a known right or
known wrong answer through the real graphs and the real scorer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.support.openai_stub import StubLLM, _role


@dataclass
class ScriptedAnswerLLM(StubLLM):
    answer: str = ""
    judge_score: float = 0.5
    judge_reason: str = "scripted"

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        tools = {t["function"]["name"] for t in body.get("tools") or []}
        full = super().reply(body) if "Judgement" not in tools else self._judgement(body)
        message = full["choices"][0]["message"]
        role, _ = _role(body)
        final = role in ("answer", "assistant") and not message.get("tool_calls")
        if final and "Judgement" not in tools:
            message["content"] = self.answer
        return full

    def _judgement(self, body: dict[str, Any]) -> dict[str, Any]:
        args = {"score": self.judge_score, "reason": self.judge_reason}
        return {
            "id": "chatcmpl-judge",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "stub"),
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_judge",
                                "type": "function",
                                "function": {"name": "Judgement", "arguments": json.dumps(args)},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
        }
