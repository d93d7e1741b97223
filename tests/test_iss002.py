"""ISS-002 regression: a model that keeps re-querying one domain with keyword variants.

The seed system let such a model pull the same runbooks into its context again and again. Here each
document's content must reach the model at most once, the budget must stop further lookups, and the
run must still end with an answer.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections import Counter
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graph.context import Context
from graph.graphs import compile_graphs
from graph.offline.text import estimate_tokens
from graph.state import run_input

VARIANTS = [
    "HikariCP",
    "连接池超时",
    "maximumPoolSize 怎么设置",
    "maxLifetime",
    "wait_timeout",
    "Flyway",
    "checksum mismatch",
    "Redis",
    "maxmemory-policy",
    "连接池耗尽",
    "leakDetectionThreshold",
    "max_connections",
    "Lettuce 连接池",
    "AOF 持久化",
    "SLOWLOG",
    "baselineOnMigrate",
    "outOfOrder",
    "CLUSTERDOWN",
    "READONLY 报错",
    "大Key",
]


class ScriptedModel(BaseChatModel):
    """Issues one lookup per turn from a fixed list, then answers; counts the tokens it is sent."""

    queries: list[str]
    sent_tokens: list[int] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:  # type: ignore[override]
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        text = "\n".join(
            m.content if isinstance(m.content, str) else json.dumps(m.content) for m in messages
        )
        self.sent_tokens.append(estimate_tokens(text))
        done = sum(1 for m in messages if isinstance(m, ToolMessage))
        if done < len(self.queries):
            call = {
                "name": "lookup_knowledge",
                "args": {"query": self.queries[done]},
                "id": f"call_{done}",
                "type": "tool_call",
            }
            msg = AIMessage(content="", tool_calls=[call])
        else:
            msg = AIMessage(content="基于已检索到的连接池、Flyway 与 Redis 手册作答。")
        return ChatResult(generations=[ChatGeneration(message=msg)])


class ScriptedFactory:
    def __init__(self, model: ScriptedModel) -> None:
        self.model = model

    def for_role(self, role: str, ctx: Any = None) -> BaseChatModel:
        return self.model


async def test_twenty_variants_over_one_domain(services, record_property) -> None:  # noqa: ANN001
    model = ScriptedModel(queries=VARIANTS, sent_tokens=[])
    deps = dataclasses.replace(services.deps, models=ScriptedFactory(model))
    graphs = compile_graphs(deps, services.checkpointer)
    out = await graphs.chat.ainvoke(
        run_input("连接池问题排查"),
        {"configurable": {"thread_id": uuid.uuid4().hex}},
        context=Context(max_executor_steps=25),
    )
    results = [
        m for m in out["scratch"] if isinstance(m, ToolMessage) and m.name == "lookup_knowledge"
    ]
    assert len(results) == 20
    payloads = [json.loads(m.content) for m in results]
    reasons = [m.artifact["dedup_reason"] for m in results]
    served = sum(1 for p in payloads if p["primary"] is not None)
    deduped = sum(1 for r in reasons if r in {"doc_retrieved", "domain_retrieved"})
    refused = sum(1 for r in reasons if r == "budget_exhausted")

    content_per_doc = Counter(
        src
        for p in payloads
        for src in [
            *([p["primary"]["source"]] if p["primary"] else []),
            *[s["source"] for s in p["supplement"]],
        ]
        if "," not in src
    )
    assert (
        content_per_doc and max(content_per_doc.values()) == 1
    )  # each document's content at most once
    assert served == 3 and deduped == 5 and refused == 12
    assert all(p["retrievedDomainsThisSession"] == ["infrastructure"] for p in payloads)
    assert all(p["message"] for p in payloads[3:])
    assert out["lookup_count"] == 8  # the budget: nothing was searched after it
    assert out["answer"]  # the run still ends with an answer
    tokens = sum(model.sent_tokens)
    record_property(
        "iss002",
        {
            "issued": 20,
            "served": served,
            "deduplicated": deduped,
            "refused": refused,
            "tokens_sent": tokens,
        },
    )
    print(
        f"\nISS-002: issued=20 served={served} deduplicated={deduped} refused={refused} tokens_sent_to_model={tokens}"
    )
