"""A chat model that keeps re-querying one domain with keyword variants, then answers.

Stands for a model that ignores "already retrieved" hints: each turn it issues the next query from
a fixed list. It counts the tokens it is sent, so tests can show what deduplication saves.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from llm.offline.text import estimate_tokens

# Twenty keyword variants, nearly all about the three infrastructure runbooks (one file, read by
# bench/_cost_scripted.py too).
VARIANTS = (Path(__file__).with_name("iss002_queries.txt")).read_text(encoding="utf-8").splitlines()


class ScriptedModel(BaseChatModel):
    """Issues one lookup per turn from a fixed list, then answers; counts the tokens it is sent.

    It remembers what it issued itself (not what it was shown), so it keeps re-querying whatever
    context the graph sends; its usage is the offline model's estimate of what it was sent."""

    queries: list[str]
    sent_tokens: list[int] = []
    issued: list[str] = []

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
        done = len(self.issued)
        if done < len(self.queries):
            self.issued.append(self.queries[done])
            call = {
                "name": "lookup_knowledge",
                "args": {"query": self.queries[done]},
                "id": f"call_{done}",
                "type": "tool_call",
            }
            msg = AIMessage(content="", tool_calls=[call])
        else:
            msg = AIMessage(content="基于已检索到的连接池、Flyway 与 Redis 手册作答。")
        n_out = estimate_tokens(str(msg.content)) + 5 * len(msg.tool_calls)
        msg.usage_metadata = {
            "input_tokens": self.sent_tokens[-1],
            "output_tokens": n_out,
            "total_tokens": self.sent_tokens[-1] + n_out,
        }
        return ChatResult(generations=[ChatGeneration(message=msg)])


class ScriptedFactory:
    """Stands in for the model factory: every role gets the same scripted model."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model

    def for_role(self, role: str, ctx: Any = None) -> BaseChatModel:
        return self.model
