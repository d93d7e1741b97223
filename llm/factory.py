"""Chat model factory: ``ChatOpenAI`` against any OpenAI-compatible endpoint, else offline.

``LLM_BASE_URL`` + ``LLM_MODEL`` select the OpenAI-compatible path (DeepSeek, vLLM, Ollama, …); a
run's ``Context.model`` may name another model on the same endpoint, or ``offline``. Token usage is
read from ``usage_metadata`` on both paths (``stream_usage`` asks the endpoint to send it).
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from graph.context import Context
from graph.extractive import Reader
from llm.offline import OfflineChatModel
from settings import Settings

OFFLINE = "offline"


class ModelFactory:
    def __init__(self, settings: Settings, documents: Reader | None = None) -> None:
        self.settings = settings
        # Lets the offline model quote a runbook's sections by the question's intent.
        self.documents = documents

    def model_name(self, ctx: Context | None = None) -> str:
        wanted = (ctx.model if ctx else "") or ""
        if wanted == OFFLINE or not self.settings.llm_base_url:
            return OFFLINE
        return wanted or self.settings.llm_model or OFFLINE

    def for_role(self, role: str, ctx: Context | None = None) -> BaseChatModel:
        name = self.model_name(ctx)
        if name == OFFLINE:
            return OfflineChatModel(role=role, documents=self.documents)
        from langchain_openai import ChatOpenAI

        s = self.settings
        return ChatOpenAI(
            model=name,
            base_url=s.llm_base_url,
            api_key=s.llm_api_key or "not-needed",
            timeout=s.llm_timeout_s,
            max_retries=s.llm_max_retries,
            temperature=0,
            stream_usage=True,
        )
