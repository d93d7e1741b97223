"""L1 chunk store: one Milvus collection with a dense field (L2 on unit vectors) and a BM25 sparse
field (jieba analyzer), written through langchain-milvus and searched route by route.

The routes are searched separately (not with Milvus' own hybrid search) so each keeps its own score;
a hit found only by BM25 still gets its exact dense distance, computed here from the stored vector.
Milvus Lite's engine in this process answers the searches directly (no protobuf round trip).
The collection records which embedding model made its vectors (``collection_model.py``); opening it
with another model stops with :class:`EmbeddingMismatch` rather than mixing two models' vectors. Why
writes flush and merge segments the way they do: ``docs/retrieval.md`` ("Milvus Lite performance").
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from retrieval.l1 import collection_model, sample_vectors
from retrieval.l1.collection_model import EmbeddingMismatch
from retrieval.l1.collection_schema import (
    DENSE,
    DENSE_INDEXES,
    JIEBA,
    META_FIELDS,
    PK,
    SPARSE,
    TEXT,
    metadata_schema,
)
from retrieval.l1.embedding_cache import EmbeddingCache, StoredChunk
from retrieval.l1.fusion import BM25_ROUTE, DENSE_ROUTE, RouteHit
from retrieval.l1.milvus_api import milvus
from retrieval.l1.milvus_lite import engine_search, in_process_setup, merge_segments
from retrieval.l1.prepared import PreparedEmbeddings
from retrieval.parsing.chunking import BREADCRUMB_BYTES, Chunk, fit_bytes

log = logging.getLogger(__name__)

RETRY_S = 5.0
CONNECT_TIMEOUT_S = 5.0


@dataclass
class SearchResult:
    dense: list[RouteHit]
    bm25: list[RouteHit]
    missing: bool = False  # the collection does not exist (nothing imported, or its data is gone)

    def routes(self) -> dict[str, list[RouteHit]]:
        return {DENSE_ROUTE: self.dense, BM25_ROUTE: self.bm25}


class StoreUnavailable(ConnectionError):
    """The vector store cannot be reached; the message says where."""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def is_milvus_lite(uri: str) -> bool:
    """pymilvus runs Milvus Lite in this process for a local ``*.db`` path."""
    return uri.endswith(".db") and "://" not in uri


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
        model_id: str = "",
    ) -> None:
        self.uri = uri
        self.collection = collection
        self.embeddings = embeddings
        self.model_id = model_id or getattr(embeddings, "model_id", type(embeddings).__name__)
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
        if self.local:
            in_process_setup(connection)
        else:
            connection["timeout"] = CONNECT_TIMEOUT_S  # fail fast on a dead server
        model_id = self.model_id
        self.vector_cache = EmbeddingCache(model_id, shipped=lambda: sample_vectors.load(model_id))
        self._prepared = PreparedEmbeddings(embeddings, self.vector_cache)
        self._connection, self._dense_params, self._timeout = connection, dense_params, timeout
        self._vectorstore: Any = None  # langchain_milvus.Milvus, connected on first use
        self._known_to_exist = False
        self._connect_lock = threading.Lock()
        self._last_failure = 0.0
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="milvus-route")
        self._write_lock = threading.RLock()
        self._bulk_depth = 0
        self._unflushed = 0  # rows inserted or deleted since the last flush
        self._unmerged = False  # flushed inside a bulk write, segments not merged yet
        self._dim: int | None = None
        self._recorded = False  # the collection carries this model's identity

    @property
    def vectorstore(self) -> Any:  # langchain_milvus.Milvus
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
                    vectorstore = self._connect()
                except EmbeddingMismatch:
                    raise
                except Exception as exc:
                    self._last_failure = time.monotonic()
                    raise StoreUnavailable(f"Milvus at {self.uri} is unreachable: {exc}") from exc
                self._vectorstore = vectorstore
        return self._vectorstore

    def _connect(self) -> Any:
        m = milvus()
        vectorstore = m.Milvus(
            embedding_function=self._prepared,
            collection_name=self.collection,
            connection_args=self._connection,
            builtin_function=m.BM25BuiltInFunction(
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
            metadata_schema=metadata_schema(),
            consistency_level="Strong",
            timeout=self._timeout,
        )
        if self.local:
            # pymilvus sleeps 0.5 s before its first index-state poll; Milvus Lite's index is built
            # by the time create_index returns, so the poll (and the sleep) is skipped.
            client = vectorstore.client
            client.create_index = functools.partial(client.create_index, sync=False)
        self._check_model(vectorstore.client)
        return vectorstore

    def _check_model(self, client: Any) -> None:
        dim = getattr(self.embeddings, "dimension", None)
        aliases = tuple(getattr(self.embeddings, "model_aliases", ()))
        self._recorded = collection_model.check(
            client, self.collection, self.uri, self.model_id, dim and int(dim), DENSE, aliases
        )

    def check_model(self) -> None:
        """Connect now and raise :class:`EmbeddingMismatch` if the collection is another model's."""
        _ = self.vectorstore

    @property
    def client(self) -> Any:  # pymilvus.MilvusClient
        return self.vectorstore.client

    def exists(self) -> bool:
        """A live check (``/healthz`` relies on it)."""
        found = self.client.has_collection(self.collection)
        self._known_to_exist = found
        return found

    def _ready(self) -> bool:
        # The collection is created once and only dropped by drop(), so a lookup need not ask
        # Milvus again on every search once it has been seen.
        return self._known_to_exist or self.exists()

    def drop(self) -> None:
        """Remove the collection (re-indexing with another model starts from nothing)."""
        with self._write_lock:
            client = self._vectorstore.client if self._vectorstore else self._raw_client()
            if client.has_collection(self.collection):
                client.drop_collection(self.collection)
            self._forget()

    def reopen(self, while_closed: Callable[[], Any]) -> Any:
        """Disconnect, run ``while_closed`` (nothing connects meanwhile: Milvus Lite's damaged files
        are set aside), forget the collection; the next use connects, the first write recreates it."""
        with self._write_lock, self._connect_lock:
            if (old := self._vectorstore) is not None:
                with contextlib.suppress(Exception):  # the server behind it may be gone
                    old.client.close()
            self._forget()
            return while_closed()

    def _forget(self) -> None:
        self._vectorstore, self._known_to_exist, self._dim = None, False, None
        self._recorded, self._unflushed, self._unmerged, self._last_failure = False, 0, False, 0.0

    def _raw_client(self) -> Any:
        return milvus().MilvusClient(**self._connection)

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
                    "breadcrumb": fit_bytes(c.breadcrumb, BREADCRUMB_BYTES),  # bytes, not chars
                },
            )
            for c in chunks
        ]
        ids = [f"{doc_id}:{c.index}" for c in chunks]
        with self._write_lock:
            self.vectorstore.add_documents(docs, ids=ids)
            self._known_to_exist = True
            if not self._recorded:
                collection_model.record(
                    self.client, self.collection, self.model_id, self._dimension()
                )
                self._recorded = True
            self._wrote(len(ids))
        return len(ids)

    def prepare(self, texts: Sequence[str]) -> None:
        """Embed texts that ``add_chunks`` will insert soon, in one batch (see ``prepared.py``)."""
        self._prepared.prepare(texts)

    def discard_prepared(self) -> None:
        self._prepared.discard()

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
        """Seal the written rows into a segment, merge segments at the end of a write batch (BM25
        statistics are per segment), and with ``warm`` build the new indexes now rather than in
        the next user query."""
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
                if self.local and self.merge_segments:
                    merge_segments(self.uri, self.collection)
                self._unmerged = False
        if warm:
            try:
                self.search_bm25("warm-up", 1)
                self.search_dense([0.0] * self._dimension(), 1)
            except Exception:  # warming is an optimisation; the next search builds what is missing
                log.debug("index warm-up after flush failed", exc_info=True)

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

    def stored_chunks(
        self, *, file_paths: Sequence[str] = (), doc_id: str = ""
    ) -> list[StoredChunk]:
        """The rows (vectors included) of these files or of this document, for reuse."""
        if not (file_paths or doc_id) or not self.exists():
            return []
        if doc_id:
            flt = f'doc_id == "{_escape(doc_id)}"'
        else:
            flt = "file_path in [" + ", ".join(f'"{_escape(p)}"' for p in file_paths) + "]"
        fields = [PK, TEXT, DENSE, *META_FIELDS]
        rows = self.client.query(self.collection, filter=flt, output_fields=fields)
        return [StoredChunk.from_row(r) for r in rows]

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

    def search_dense(self, vector: Sequence[float], limit: int, flt: str = "") -> list[RouteHit]:
        params = {"metric_type": "L2", "params": self._dense_search_params}
        hits = self._route(vector, DENSE, limit, flt, [TEXT, *META_FIELDS], params)
        return [RouteHit(pk, distance, fields) for pk, distance, fields in hits]

    def search_bm25(self, text: str, limit: int, flt: str = "") -> list[RouteHit]:
        params = {"metric_type": "BM25", "params": {}}
        hits = self._route(text, SPARSE, limit, flt, [TEXT, DENSE, *META_FIELDS], params)
        # Milvus reports a BM25 hit's distance as the negated score.
        return [RouteHit(pk, -distance, fields) for pk, distance, fields in hits]

    def _route(
        self, data: Any, field: str, limit: int, flt: str, output: list[str], params: dict
    ) -> list[tuple[Any, float, dict[str, Any]]]:
        """One route's ``(pk, distance, fields)`` (``data``: a vector or a text): from Milvus Lite's
        engine in this process when it answers (``engine_search``: same hits), else over gRPC."""
        request = {"anns_field": field, "limit": limit, "filter": flt, "output_fields": output}
        request["search_params"] = params
        client = self.client  # connects first: that starts Milvus Lite in this process
        hits = engine_search(self.uri, self.collection, data, **request) if self.local else None
        if hits is None:
            query = data if isinstance(data, str) else list(data)
            res = client.search(self.collection, data=[query], **request)
            hits = [(h[PK], float(h["distance"]), dict(h["entity"])) for h in res[0]]
        return hits

    def search(
        self,
        query: str,
        vector: Sequence[float],
        *,
        candidates: int = 40,
        dense: bool = True,
        exclude: Collection[str] = (),
    ) -> SearchResult:
        """Both routes (concurrently against a server; ``dense=False`` skips the dense route when
        it has no vote). Every BM25 hit carries its exact ``dense_distance`` in its fields.
        Chunks of the ``exclude`` doc_ids (disabled documents) are filtered out in Milvus, so they
        take no candidate's place."""
        if not self._ready():
            return SearchResult([], [], missing=True)
        flt = ""
        if exclude:
            flt = "doc_id not in [" + ", ".join(f'"{_escape(d)}"' for d in sorted(exclude)) + "]"
        if dense and self.parallel_routes:
            bm25_f = self._pool.submit(self.search_bm25, query, candidates, flt)
            dense_hits = self.search_dense(vector, candidates, flt)
            bm25 = bm25_f.result()
        else:
            dense_hits = self.search_dense(vector, candidates, flt) if dense else []
            bm25 = self.search_bm25(query, candidates, flt)
        q = np.asarray(vector, dtype=np.float32)
        for hit in bm25:
            stored = hit.fields.pop(DENSE, None)
            if stored is not None:
                diff = q - np.asarray(stored, dtype=np.float32)
                hit.fields["dense_distance"] = float(diff @ diff)
        return SearchResult(dense_hits, bm25)

    def close(self) -> None:
        self._pool.shutdown(wait=False)
        if self._vectorstore is None:
            return
        try:
            self._vectorstore.client.close()
        except Exception:  # closing is best effort at shutdown
            log.debug("milvus client close failed", exc_info=True)
