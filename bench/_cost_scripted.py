"""The ISS-002 model of ``bench_cost.py``: every role re-queries one domain twenty times."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# ISS-002 (docs/spec.md): a model that ignores "already retrieved" and keeps re-querying one domain,
# with the twenty keyword variants the tests use (read from this checkout, whichever tree runs).
VARIANTS = (
    (Path(__file__).resolve().parent.parent / "tests" / "support" / "iss002_queries.txt")
    .read_text(encoding="utf-8")
    .splitlines()
)


def scripted_factory():  # noqa: ANN202
    """Every role gets a model that issues the next variant each time it may call tools.

    It remembers what it issued itself (not what it sees), so it behaves the same whatever
    context the graph sends it; usage is the offline estimator over what it was sent."""
    from _common import code
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.utils.function_calling import convert_to_openai_tool

    # graph/offline/ before issue 21 moved the offline model to llm/ (the baseline tree has it there).
    estimate_tokens = code("llm.offline.text", "graph.offline.text").estimate_tokens

    class Scripted(BaseChatModel):
        issued: dict[str, int]
        acting: bool = False

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:  # type: ignore[override]
            names = {convert_to_openai_tool(t)["function"]["name"] for t in tools}
            return self.model_copy(update={"acting": "lookup_knowledge" in names})

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):  # noqa: ANN202
            text = "\n".join(
                m.content if isinstance(m.content, str) else json.dumps(m.content) for m in messages
            )
            done = self.issued["n"]
            if self.acting and done < len(VARIANTS):
                self.issued["n"] += 1
                call = {"name": "lookup_knowledge", "args": {"query": VARIANTS[done]}}
                msg = AIMessage(content="", tool_calls=[{**call, "id": f"call_{done}"}])
            else:
                msg = AIMessage(content="基于已检索到的连接池、Flyway 与 Redis 手册作答。")
            n_in, n_out = estimate_tokens(text), estimate_tokens(str(msg.content)) + 5
            msg.usage_metadata = {
                "input_tokens": n_in,
                "output_tokens": n_out,
                "total_tokens": n_in + n_out,
            }
            return ChatResult(generations=[ChatGeneration(message=msg)])

    class Factory:
        def __init__(self) -> None:
            self.model = Scripted(issued={"n": 0})

        def for_role(self, role: str, ctx: Any = None) -> BaseChatModel:
            return self.model

    return Factory()
