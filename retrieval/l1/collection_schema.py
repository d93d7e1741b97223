"""The chunk collection's fields and index choices: what ``store.py`` creates and searches."""

from __future__ import annotations

from typing import Any

from retrieval.l1.milvus_api import milvus

DENSE, SPARSE, TEXT, PK = "dense", "sparse", "text", "pk"
META_FIELDS = ("doc_id", "file_path", "category", "chunk_index", "breadcrumb")
JIEBA = {"tokenizer": "jieba"}
DENSE_INDEXES = {
    "FLAT": ({"index_type": "FLAT", "metric_type": "L2", "params": {}}, {}),
    "HNSW": (
        {"index_type": "HNSW", "metric_type": "L2", "params": {"M": 16, "efConstruction": 200}},
        {"ef": 64},
    ),
}


def metadata_schema() -> dict[str, Any]:
    data_type = milvus().DataType
    varchar = lambda n: {"dtype": data_type.VARCHAR, "kwargs": {"max_length": n}}  # noqa: E731
    return {
        "doc_id": varchar(64),
        "file_path": varchar(512),
        "category": varchar(64),
        "chunk_index": {"dtype": data_type.INT64},
        "breadcrumb": varchar(1024),
    }
