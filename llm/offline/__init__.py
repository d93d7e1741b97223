"""``OfflineChatModel``: a deterministic, extractive, tool-calling chat model for offline use.

It is not an LLM. It runs the roles in ``roles.py`` — planning from the knowledge map
(``planning.py``), calling tools with the question as asked (``followup.py`` resolves a follow-up's
subject; ``alerts.py`` picks the firing alert to look at first), stopping on PRECISE / HIGHLY_RELEVANT or an already-retrieved domain,
answering with lines taken from tool results and their sources — so the whole product works with no
API key, and tests can assert on whole runs. Usage metadata is an estimate (see ``text.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from llm.offline.roles import respond
from llm.offline.text import estimate_tokens

ROLES = ("assistant", "executor", "supervisor", "planner", "answer", "enricher", "domain_summary")


class OfflineChatModel(BaseChatModel):
    role: str = "assistant"
    tool_names: list[str] = []
    model_name: str = "superbiz-offline"
    # path → (title, body) of a knowledge-base document; None: answer from the lookup text only.
    documents: Any = Field(default=None, exclude=True)

    @property
    def _llm_type(self) -> str:
        return "superbiz-offline"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "role": self.role}

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> OfflineChatModel:  # type: ignore[override]
        names = [convert_to_openai_tool(t)["function"]["name"] for t in tools]
        return self.model_copy(update={"tool_names": names})

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        msg = respond(self.role, messages, set(self.tool_names), read=self.documents)
        prompt = "\n".join(
            m.content if isinstance(m.content, str) else json.dumps(m.content, ensure_ascii=False)
            for m in messages
        )
        out_text = msg.content if isinstance(msg.content, str) else ""
        out_text += json.dumps(msg.tool_calls, ensure_ascii=False) if msg.tool_calls else ""
        n_in, n_out = estimate_tokens(prompt), estimate_tokens(out_text)
        msg.usage_metadata = {
            "input_tokens": n_in,
            "output_tokens": n_out,
            "total_tokens": n_in + n_out,
        }
        msg.response_metadata = {
            "model_name": self.model_name,
            "finish_reason": "tool_calls" if msg.tool_calls else "stop",
        }
        return msg

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """Stream the same reply in pieces, so token streaming works end to end offline."""
        msg = self._reply(messages)
        text = msg.content if isinstance(msg.content, str) else ""
        pieces = re.findall(r".{1,12}(?:\s|$)|.{1,12}", text, flags=re.S) if text else []
        for piece in pieces:
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
        last = AIMessageChunk(
            content="",
            tool_call_chunks=[
                tool_call_chunk(
                    name=tc["name"],
                    args=json.dumps(tc["args"], ensure_ascii=False),
                    id=tc["id"],
                    index=i,
                )
                for i, tc in enumerate(msg.tool_calls)
            ],
            usage_metadata=msg.usage_metadata,
            response_metadata=msg.response_metadata,
            chunk_position="last",
        )
        yield ChatGenerationChunk(message=last)


__all__ = ["OfflineChatModel", "ROLES"]
