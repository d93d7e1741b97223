"""ISS-002 (docs/spec.md) regression: a model that keeps re-querying one domain with keyword variants.

The first version let such a model pull the same runbooks into its context again and again. Here each
document's content must reach the model at most once, the budget must stop further lookups, and the
run must still end with an answer.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections import Counter

from langchain_core.messages import ToolMessage

from graph.context import Context
from graph.graphs import compile_graphs
from graph.state import run_input
from tests.support.scripted_model import VARIANTS, ScriptedFactory, ScriptedModel


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
