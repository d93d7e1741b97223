"""L1 chunk store: one Milvus collection with a dense field (L2 on unit vectors) and a BM25 sparse
field (jieba analyzer), written through langchain-milvus and searched route by route.

The two routes are searched separately (not with Milvus' own hybrid search) because the RRF score
alone would hide each route's score, and relevance is judged on the dense similarity. A hit found
only by BM25 still gets its exact dense distance: the BM25 route returns the stored vector and the
distance to the query vector is computed here.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
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

log = logging.getLogger(__name__)

DENSE, SPARSE, TEXT, PK = "dense", "sparse", "text", "pk"
META_FIELDS = ("doc_id", "file_path", "category", "chunk_index", "breadcrumb")
JIEBA = {"tokenizer": "jieba"}
DENSE_ROUTE, BM25_ROUTE = "dense", "bm25"


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


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


class ChunkStore:
    def __init__(
        self,
        uri: str,
        embeddings: Embeddings,
        *,
        collection: str = "superbiz_chunks",
        token: str = "",
        timeout: float | None = None,
    ) -> None:
        self.uri = uri
        self.collection = collection
        self.embeddings = embeddings
        connection: dict[str, Any] = {"uri": uri}
        if token:
            connection["token"] = token
        self.vectorstore = Milvus(
            embedding_function=embeddings,
            collection_name=collection,
            connection_args=connection,
            builtin_function=BM25BuiltInFunction(
                input_field_names=TEXT,
                output_field_names=SPARSE,
                analyzer_params=JIEBA,
                enable_match=False,
            ),
            vector_field=[DENSE, SPARSE],
            # Milvus Lite needs these spelled out for the BM25 field (it has no AUTOINDEX for it).
            index_params=[
                {"index_type": "FLAT", "metric_type": "L2", "params": {}},
                {"index_type": "SPARSE_INVERTED_INDEX", "metric_type": "BM25", "params": {}},
            ],
            search_params=[{"metric_type": "L2", "params": {}}, {"metric_type": "BM25", "params": {}}],
            primary_field=PK,
            text_field=TEXT,
            auto_id=False,
            metadata_schema=METADATA_SCHEMA,
            consistency_level="Strong",
            timeout=timeout,
        )
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="milvus-route")

    @property
    def client(self) -> MilvusClient:
        return self.vectorstore.client

    def exists(self) -> bool:
        return self.client.has_collection(self.collection)

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
        self.vectorstore.add_documents(docs, ids=ids)
        return len(ids)

    def delete_doc(self, doc_id: str) -> None:
        if self.exists():
            self.client.delete(self.collection, filter=f'doc_id == "{_escape(doc_id)}"')

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
            search_params={"metric_type": "L2", "params": {}},
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
        """Both routes concurrently, fused by weighted RRF; every hit carries its dense distance."""
        if not self.exists():
            return SearchResult([], [], [])
        active = {r for r, w in (weights or {DENSE_ROUTE: 1, BM25_ROUTE: 1}).items() if w > 0}
        dense_f = self._pool.submit(self.search_dense, vector, candidates) if DENSE_ROUTE in active else None
        bm25_f = self._pool.submit(self.search_bm25, query, candidates) if BM25_ROUTE in active else None
        dense = dense_f.result() if dense_f else []
        bm25 = bm25_f.result() if bm25_f else []
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
        try:
            self.client.close()
        except Exception:  # closing is best effort at shutdown
            log.debug("milvus client close failed", exc_info=True)
