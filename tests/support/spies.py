"""Callbacks that watch a graph run."""

from __future__ import annotations

from typing import Any


class ModelInputs:
    """Callback that records what each graph node sent to the model."""

    def __init__(self) -> None:
        from langchain_core.callbacks import AsyncCallbackHandler

        outer = self

        class _Handler(AsyncCallbackHandler):
            async def on_chat_model_start(self, serialized, messages, *, metadata=None, **kw):  # noqa: ANN001
                node = (metadata or {}).get("langgraph_node", "?")
                outer.calls.append((node, messages[0]))

        self.calls: list[tuple[str, list[Any]]] = []
        self.handler = _Handler()

    def for_node(self, node: str) -> list[list[Any]]:
        return [m for n, m in self.calls if n == node]
