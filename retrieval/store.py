"""L1 chunk store: one Milvus collection with a dense field (L2 on unit vectors) and a BM25 sparse
field (jieba analyzer), written through langchain-milvus and searched route by route.

The two routes are searched separately (not with Milvus' own hybrid search) because the RRF score
alone would hide each route's score, and relevance is judged on the dense similarity. A hit found
only by BM25 still gets its exact dense distance: the BM25 route returns the stored vector and the
distance to the query vector is computed here.

Why writes flush and merge segments the way they do, with numbers: ``bench/README.md`` ("Milvus
Lite performance notes").
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_milvus import BM25BuiltInFunction, Milvus
from pymilvus import DataType, MilvusClient

from retrieval.chunking import Chunk
from retrieval.fusion import FusedHit, RouteHit, rrf
from retrieval.milvus_lite import merge_segments, warm_jieba

log = logging.getLogger(__name__)

DENSE, SPARSE, TEXT, PK = "dense", "sparse", "text", "pk"
META_FIELDS = ("doc_id", "file_path", "category", "chunk_index", "breadcrumb")
JIEBA = {"tokenizer": "jieba"}
DENSE_ROUTE, BM25_ROUTE = "dense", "bm25"
DENSE_INDEXES = {
    "FLAT": ({"index_type": "FLAT", "metric_type": "L2", "params": {}}, {}),
    "HNSW": (
        {"index_type": "HNSW", "metric_type": "L2", "params": {"M": 16, "efConstruction": 200}},
        {"ef": 64},
    ),
}


def _varchar(n: int) -> dict[str, Any]:
    return {"dtype": DataType.VARCHAR, "kwargs": {"max_length": n}}


METADATA_SCHEMA = {
    "doc_id": _varchar(64),
    "file_path": _varchar(512),
    "category": _varchar(64),
    "chunk_index": {"dtype": DataType.INT64},
    "breadcrumb": _varchar(1024),
}


@dataclass
class SearchResult:
    hits: list[FusedHit]
    dense: list[RouteHit]
    bm25: list[RouteHit]


RETRY_S = 5.0
CONNECT_TIMEOUT_S = 5.0


class StoreUnavailable(ConnectionError):
    """The vector store cannot be reached; the message says where."""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def is_milvus_lite(uri: str) -> bool:
    """pymilvus runs Milvus Lite in this process for a local ``*.db`` path."""
    return uri.endswith(".db") and "://" not in uri


class _PreparedEmbeddings(Embeddings):
    """What langchain embeds with: vectors computed ahead by :meth:`ChunkStore.prepare` are handed
    out (once each); any other text goes to the real model."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.ready: dict[str, list[float]] = {}
        self.lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self.lock:
            found = [self.ready.pop(t, None) for t in texts]
        missing = [t for t, v in zip(texts, found, strict=True) if v is None]
        computed = iter(self.inner.embed_documents(missing) if missing else [])
        return [v if v is not None else next(computed) for v in found]

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


class ChunkStore:
    def __init__(
        self,
        uri: str,
        embeddings: Embeddings,
        *,
        collection: str = "superbiz_chunks",
        token: str = "",
        timeout: float | None = None,
        dense_index: str = "FLAT",
        flush_rows: int = 2000,
        parallel_routes: bool | None = None,
        merge_segments: bool = True,
    ) -> None:
        self.uri = uri
        self.collection = collection
        self.embeddings = embeddings
        self.local = is_milvus_lite(uri)
        self.flush_rows = flush_rows
        self.merge_segments = merge_segments
        # In-process Milvus Lite: both routes are Python under one GIL, so threads cannot overlap them.
        self.parallel_routes = (not self.local) if parallel_routes is None else parallel_routes
        try:
            dense_params, self._dense_search_params = DENSE_INDEXES[dense_index.upper()]
        except KeyError:
            raise ValueError(f"dense_index must be one of {sorted(DENSE_INDEXES)}") from None
        connection: dict[str, Any] = {"uri": uri}
        if token:
            connection["token"] = token
        if not self.local:
            connection["timeout"] = CONNECT_TIMEOUT_S  # fail fast on a dead server
        if self.local:
            threading.Thread(target=warm_jieba, name="jieba-warm-up", daemon=True).start()
        self._prepared = _PreparedEmbeddings(embeddings)
        self._connection, self._dense_params, self._timeout = connection, dense_params, timeout
        self._vectorstore: Milvus | None = None
        self._known_to_exist = False
        self._connect_lock = threading.Lock()
        self._last_failure = 0.0
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="milvus-route")
        self._write_lock = threading.RLock()
        self._bulk_depth = 0
        self._unflushed = 0  # rows inserted or deleted since the last flush
        self._unmerged = False  # flushed inside a bulk write, segments not merged yet
        self._dim: int | None = None

    @property
    def vectorstore(self) -> Milvus:
        """Connect on first use, not at start-up: a Milvus that is down must not stop the server.

        While it stays unreachable, each use raises :class:`StoreUnavailable` (re-trying at most
        every ``RETRY_S`` seconds), which callers turn into an L0-only lookup or a FAILED import.
        """
        if self._vectorstore is not None:
            return self._vectorstore
        with self._connect_lock:
            if self._vectorstore is None:
                wait = self._last_failure + RETRY_S - time.monotonic()
                if wait > 0:
                    raise StoreUnavailable(
                        f"Milvus at {self.uri} is unreachable (next retry in {wait:.0f}s)"
                    )
                try:
                    self._vectorstore = self._connect()
                except Exception as exc:
                    self._last_failure = time.monotonic()
                    raise StoreUnavailable(
                        f"Milvus at {self.uri} is unreachable: {type(exc).__name__}: {exc}"
                    ) from exc
        return self._vectorstore

    def _connect(self) -> Milvus:
        vectorstore = Milvus(
            embedding_function=self._prepared,
            collection_name=self.collection,
            connection_args=self._connection,
            builtin_function=BM25BuiltInFunction(
                input_field_names=TEXT,
                output_field_names=SPARSE,
                analyzer_params=JIEBA,
                enable_match=False,
            ),
            vector_field=[DENSE, SPARSE],
            # Milvus Lite needs these spelled out for the BM25 field (it has no AUTOINDEX for it).
            index_params=[
                self._dense_params,
                {"index_type": "SPARSE_INVERTED_INDEX", "metric_type": "BM25", "params": {}},
            ],
            search_params=[
                {"metric_type": "L2", "params": self._dense_search_params},
                {"metric_type": "BM25", "params": {}},
            ],
            primary_field=PK,
            text_field=TEXT,
            auto_id=False,
            metadata_schema=METADATA_SCHEMA,
            consistency_level="Strong",
            timeout=self._timeout,
        )
        if self.local:
            # pymilvus sleeps 0.5 s before its first index-state poll; Milvus Lite's index is built
            # by the time create_index returns, so the poll (and the sleep) is skipped.
            client = vectorstore.client
            client.create_index = functools.partial(client.create_index, sync=False)
        return vectorstore

    @property
    def client(self) -> MilvusClient:
        return self.vectorstore.client

    def exists(self) -> bool:
        """A live check (``/healthz`` relies on it)."""
        found = self.client.has_collection(self.collection)
        self._known_to_exist = found
        return found

    def _ready(self) -> bool:
        # The collection is created once and never dropped here, so a lookup need not ask Milvus
        # again on every search once it has been seen.
        return self._known_to_exist or self.exists()

    # --- writes -------------------------------------------------------------------------------

    def add_chunks(
        self, *, doc_id: str, file_path: str, category: str, chunks: Sequence[Chunk]
    ) -> int:
        if not chunks:
            return 0
        docs = [
            Document(
                page_content=c.indexed_text,
                metadata={
                    "doc_id": doc_id,
                    "file_path": file_path,
                    "category": category,
                    "chunk_index": c.index,
                    "breadcrumb": c.breadcrumb[:1024],
                },
            )
            for c in chunks
        ]
        ids = [f"{doc_id}:{c.index}" for c in chunks]
        with self._write_lock:
            self.vectorstore.add_documents(docs, ids=ids)
            self._wrote(len(ids))
        return len(ids)

    def prepare(self, texts: Sequence[str]) -> None:
        """Embed texts that ``add_chunks`` will insert soon, in one batch.

        The importer embeds several small documents' chunks together (larger, length-sorted batches
        run ~1.25× faster on CPU than one call per document); ``add_chunks`` then picks the vectors
        up by text. Vectors never picked up are dropped by :meth:`discard_prepared`.
        """
        texts = list(dict.fromkeys(texts))
        if not texts:
            return
        vectors = self.embeddings.embed_documents(texts)
        with self._prepared.lock:
            self._prepared.ready.update(zip(texts, vectors, strict=True))

    def discard_prepared(self) -> None:
        with self._prepared.lock:
            self._prepared.ready.clear()

    def delete_doc(self, doc_id: str) -> None:
        with self._write_lock:
            if self.exists():
                res = self.client.delete(self.collection, filter=f'doc_id == "{_escape(doc_id)}"')
                # pymilvus returns the deleted primary keys (older versions: {"delete_count": n}).
                n = res.get("delete_count", 0) if isinstance(res, dict) else len(res or ())
                if n:
                    self._wrote(int(n))

    def _wrote(self, rows: int) -> None:
        self._unflushed += rows
        if self._bulk_depth == 0 or self._unflushed >= self.flush_rows:
            self.flush()

    @contextlib.contextmanager
    def bulk(self) -> Iterator[ChunkStore]:
        """Group writes: flush once at the end (and every ``flush_rows`` rows), not per write.

        Re-entrant and usable from any thread; searches during a bulk write see every row, the
        unflushed ones just cost more to search.
        """
        self.begin_bulk()
        try:
            yield self
        finally:
            self.end_bulk()

    def begin_bulk(self) -> None:
        with self._write_lock:
            self._bulk_depth += 1

    def end_bulk(self) -> None:
        """Blocking (it may flush): call it off the event loop."""
        with self._write_lock:
            self._bulk_depth = max(self._bulk_depth - 1, 0)
            if self._bulk_depth == 0 and (self._unflushed or self._unmerged):
                self.flush()

    def flush(self, *, warm: bool = True, merge: bool | None = None) -> None:
        """Seal the written rows into a segment and build its search indexes now.

        Without this, Milvus Lite keeps rows in its MemTable and rebuilds the BM25 index over all of
        them on every query. ``merge`` (default: at the end of a write batch) then folds all
        segments into one, because Milvus Lite scores BM25 with each segment's own statistics
        (N, df, avgdl): a freshly imported document alone in a small segment would get IDFs from
        its own chunks only. One segment keeps the scores the seed got from one MemTable. ``warm``
        runs one search per route so the (lazily built) indexes are ready before the next user
        query.
        """
        with self._write_lock:
            if not self.exists():
                self._unflushed, self._unmerged = 0, False
                return
            if not self._unflushed and not self._unmerged:
                return
            if self._unflushed:
                self.client.flush(self.collection)
                self._unflushed, self._unmerged = 0, True
            if self._unmerged and (merge if merge is not None else self._bulk_depth == 0):
                self._merge_segments()
                self._unmerged = False
        if warm:
            try:
                self.search_bm25("warm-up", 1)
                self.search_dense([0.0] * self._dimension(), 1)
            except Exception:  # warming is an optimisation; the next search builds what is missing
                log.debug("index warm-up after flush failed", exc_info=True)

    def _merge_segments(self) -> bool:
        if not self.local or not self.merge_segments:
            return False
        return merge_segments(self.uri, self.collection)

    def _dimension(self) -> int:
        if self._dim is None:
            fields = self.client.describe_collection(self.collection)["fields"]
            dense = next(f for f in fields if f["name"] == DENSE)
            self._dim = int(dense["params"]["dim"])
        return self._dim

    def count(self, doc_id: str | None = None) -> int:
        if not self.exists():
            return 0
        flt = f'doc_id == "{_escape(doc_id)}"' if doc_id else ""
        res = self.client.query(self.collection, filter=flt, output_fields=["count(*)"])
        return int(res[0]["count(*)"]) if res else 0

    def chunks_of(self, doc_id: str) -> list[dict[str, Any]]:
        if not self.exists():
            return []
        rows = self.client.query(
            self.collection,
            filter=f'doc_id == "{_escape(doc_id)}"',
            output_fields=[TEXT, *META_FIELDS],
        )
        return sorted(rows, key=lambda r: r["chunk_index"])

    # --- reads --------------------------------------------------------------------------------

    def search_dense(self, vector: Sequence[float], limit: int) -> list[RouteHit]:
        res = self.client.search(
            self.collection,
            data=[list(vector)],
            anns_field=DENSE,
            limit=limit,
            output_fields=[TEXT, *META_FIELDS],
            search_params={"metric_type": "L2", "params": self._dense_search_params},
        )
        return [RouteHit(h[PK], float(h["distance"]), dict(h["entity"])) for h in res[0]]

    def search_bm25(self, text: str, limit: int) -> list[RouteHit]:
        res = self.client.search(
            self.collection,
            data=[text],
            anns_field=SPARSE,
            limit=limit,
            output_fields=[TEXT, DENSE, *META_FIELDS],
            search_params={"metric_type": "BM25", "params": {}},
        )
        # Milvus reports a BM25 hit's distance as the negated score.
        return [RouteHit(h[PK], -float(h["distance"]), dict(h["entity"])) for h in res[0]]

    def search(
        self,
        query: str,
        vector: Sequence[float],
        *,
        candidates: int = 20,
        limit: int = 5,
        weights: dict[str, float] | None = None,
        rrf_k: int = 60,
    ) -> SearchResult:
        """Both routes (concurrently against a server), fused by weighted RRF; every hit carries
        its dense distance."""
        if not self._ready():
            return SearchResult([], [], [])
        active = {r for r, w in (weights or {DENSE_ROUTE: 1, BM25_ROUTE: 1}).items() if w > 0}
        if self.parallel_routes and len(active) == 2:
            bm25_f = self._pool.submit(self.search_bm25, query, candidates)
            dense = self.search_dense(vector, candidates)
            bm25 = bm25_f.result()
        else:
            dense = self.search_dense(vector, candidates) if DENSE_ROUTE in active else []
            bm25 = self.search_bm25(query, candidates) if BM25_ROUTE in active else []
        fused = rrf({DENSE_ROUTE: dense, BM25_ROUTE: bm25}, weights, k=rrf_k, limit=limit)
        q = np.asarray(vector, dtype=np.float32)
        for hit in fused:
            if DENSE_ROUTE not in hit.scores:
                stored = hit.fields.get(DENSE)
                if stored is not None:
                    diff = q - np.asarray(stored, dtype=np.float32)
                    hit.scores["dense_distance"] = float(diff @ diff)
            else:
                hit.scores["dense_distance"] = hit.scores[DENSE_ROUTE]
            hit.fields.pop(DENSE, None)
        return SearchResult(fused, dense, bm25)

    def close(self) -> None:
        self._pool.shutdown(wait=False)
        if self._vectorstore is None:
            return
        try:
            self._vectorstore.client.close()
        except Exception:  # closing is best effort at shutdown
            log.debug("milvus client close failed", exc_info=True)
