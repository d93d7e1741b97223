"""True token accounting (issue 14): over the OpenAI wire protocol each recorded model step holds the
tokens the endpoint reported in its usage — streamed or not — and offline runs fill the same field
with the offline model's estimate."""

from __future__ import annotations

import dataclasses

import pytest

from graph.context import Context
from graph.graphs import compile_graphs
from llm.factory import ModelFactory
from llm.offline.text import estimate_tokens
from persistence import repository as repo
from settings import load_settings
from tests.support.openai_stub import StubLLM

QUESTION = "支付网关 ERR_TIMEOUT 突增，同时订单服务 HikariCP 连接池超时，分别怎么排查？"


@pytest.fixture
def stub():
    server = StubLLM().start()
    yield server
    server.stop()


async def _steps(services, session_id: str):  # noqa: ANN001, ANN202
    async with services.db.session() as db:
        return list(await repo.list_steps(db, session_id))


async def test_recorded_tokens_are_the_endpoints_usage(services, stub) -> None:  # noqa: ANN001
    settings = load_settings(
        llm_base_url=stub.base_url, llm_model="stub-model", llm_api_key="k", llm_max_retries=0
    )
    graphs = compile_graphs(
        dataclasses.replace(services.deps, models=ModelFactory(settings)), services.checkpointer
    )
    result = await services.runner().run(QUESTION, graph=graphs.chat, context=Context())
    assert result.status == "SUCCESS", result.error
    steps = await _steps(services, result.session_id)
    # The runner streams tokens to the console: the model calls went out streamed, asking for usage.
    streamed = [r for r in stub.requests if r.get("stream")]
    assert streamed and all(r["stream_options"] == {"include_usage": True} for r in streamed)
    assert len(steps) == len(stub.usages) >= 4  # planner, two executors, answer
    assert [s.token_count for s in steps] == [u["total_tokens"] for u in stub.usages]
    # Not a local estimate: the stub counts the whole request body, tool schemas and all.
    first = steps[0]
    assert first.token_count != estimate_tokens(first.model_input)


async def test_offline_runs_fill_the_same_field_with_the_estimate(services) -> None:  # noqa: ANN001
    result = await services.runner().run(QUESTION, context=Context())
    steps = await _steps(services, result.session_id)
    assert steps and all(s.token_count and s.token_count > 0 for s in steps)
    usage = [(s.output_message or {}).get("data", {}).get("usage_metadata") for s in steps]
    assert [s.token_count for s in steps] == [u["total_tokens"] for u in usage]
