"""With a hosted model the runbook draft is filled in: ``ChatOpenAI`` over the real OpenAI wire
protocol against a local server that answers like a model would (the one part that cannot run
here); a reply that is not a runbook keeps the skeleton."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from fastapi import FastAPI, Request

from api.routes.gaps import _fill
from graph.prompts import load_prompts
from llm.factory import ModelFactory
from persistence import gaps
from tests.support.kb import kb_settings
from tests.support.paths import ROOT
from tests.support.threaded_server import ThreadedServer


class RunbookModel(ThreadedServer):
    """Answers the draft prompt with the skeleton's TODOs filled in (or with chatter)."""

    reply_runbook = True
    seen: list[dict[str, Any]]

    def app(self) -> FastAPI:
        app, self.seen = FastAPI(), []

        @app.post("/v1/chat/completions")
        async def complete(request: Request) -> dict[str, Any]:
            body = await request.json()
            self.seen.append(body)
            skeleton = body["messages"][-1]["content"]
            text = (
                "```markdown\n"
                + skeleton.replace("TODO: the safe first step.", "扩容消费者。")
                + "```"
                if self.reply_runbook
                else "Sure! Here is some advice."
            )
            return {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
            }

        return app


async def test_a_hosted_model_fills_the_draft(tmp_path: Path) -> None:
    stub = RunbookModel().start()
    try:
        settings = kb_settings(
            tmp_path, llm_base_url=f"http://127.0.0.1:{stub.port}/v1", llm_model="stub-model"
        )
        services = SimpleNamespace(
            settings=settings,
            deps=SimpleNamespace(
                models=ModelFactory(settings), prompts=load_prompts(ROOT / "prompts")
            ),
        )
        row = gaps.LookupRow(
            "s1", datetime.now(UTC), "分析当前告警", "", "KafkaConsumerLagHigh", "NONE", ()
        )
        skeleton = gaps.draft(gaps.alert_gaps([row])[0])["markdown"]
        filled = await _fill(services, skeleton)
        assert filled is not None and "扩容消费者。" in filled and filled.startswith("---")
        assert "## Mitigation" in filled and "```" not in filled
        sent = stub.seen[-1]
        assert sent["model"] == "stub-model"
        assert sent["messages"][0]["content"].startswith("You write SRE runbooks")
        stub.reply_runbook = False
        assert await _fill(services, skeleton) is None  # chatter: the skeleton stays
    finally:
        stub.stop()


async def test_offline_the_draft_is_the_skeleton(tmp_path: Path) -> None:
    settings = kb_settings(tmp_path)
    services = SimpleNamespace(settings=settings, deps=None)
    assert await _fill(services, "---\ntitle: x\n---\n") is None
