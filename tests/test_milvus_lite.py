"""The Milvus Lite internals ``retrieval/l1/milvus_lite.py`` drives (pinned: milvus-lite 3.2.2).

Milvus Lite has no public manual compaction; the store merges segments after every write batch so
BM25 scores with one set of statistics. If an upgrade moves those internals, merging silently stops
(searches stay correct, scores drift): these tests make that loud. Searches ask the engine in this
process directly (``engine_search``) and fall back to gRPC: its hits must be gRPC's, exactly.
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

from langchain_core.embeddings import Embeddings

from retrieval.l1 import store as store_module
from retrieval.l1.milvus_lite import engine_search, merge_segments
from retrieval.l1.store import ChunkStore
from retrieval.parsing.chunking import Chunk


class Unit(Embeddings):
    """The same vector for every text (merging is about rows, not vectors)."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0, 0.0, 0.0]


def _data_files(uri: str, collection: str) -> int:
    from milvus_lite.server_manager import server_manager_instance

    col = server_manager_instance._servers[str(Path(uri).resolve())][1].get_collection(collection)
    return sum(len(list(col._manifest.get_data_files(p))) for p in col._manifest.list_partitions())


def test_the_pinned_version_is_installed() -> None:
    assert version("milvus-lite") == "3.2.2", "retrieval/l1/milvus_lite.py was written for 3.2.2"


def test_segments_written_in_separate_batches_merge_into_one(tmp_path: Path) -> None:
    uri = str(tmp_path / "merge.db")
    store = ChunkStore(uri, Unit(), collection="merge_probe", merge_segments=False)
    try:
        for i in range(3):  # three flushed batches: three segments
            store.add_chunks(
                doc_id=f"d{i}",
                file_path=f"x/d{i}.md",
                category="x",
                chunks=[Chunk(0, f"D{i}", f"document number {i} about redis", 4)],
            )
        assert _data_files(uri, "merge_probe") >= 3
        assert merge_segments(uri, "merge_probe") is True
        assert _data_files(uri, "merge_probe") == 1
        hits = store.search_bm25("redis", 10)
        assert sorted(h.fields["doc_id"] for h in hits) == ["d0", "d1", "d2"]  # nothing lost
    finally:
        store.close()


class Hashed(Embeddings):
    """A distinct unit vector per text: dense distances differ from hit to hit."""

    def _v(self, text: str) -> list[float]:
        import numpy as np

        v = np.random.default_rng(sum(map(ord, text))).standard_normal(8)
        return (v / np.linalg.norm(v)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._v(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._v(text)


def test_engine_search_answers_what_grpc_answers(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    uri = str(tmp_path / "direct.db")
    store = ChunkStore(uri, Hashed(), collection="direct_probe")
    words = ["redis memory full", "mysql pool timeout", "kafka lag 消费 延迟", "redis cluster down"]
    try:
        for i, text in enumerate(words):
            chunks = [Chunk(j, f"D{i}", f"{text} part {j}", 4) for j in range(3)]
            store.add_chunks(doc_id=f"d{i}", file_path=f"x/d{i}.md", category="x", chunks=chunks)
        calls = []
        real = store_module.engine_search

        def counted(*a, **k):  # noqa: ANN002, ANN003, ANN202
            calls.append(1)
            return real(*a, **k)

        def run() -> list:
            v = store.embeddings.embed_query("redis")
            out = []
            for flt in ("", 'doc_id not in ["d0"]'):
                res = store.search("redis 延迟", v, candidates=8, exclude={"d3"} if flt else ())
                out += [store.search_dense(v, 5, flt), store.search_bm25("redis", 5, flt)]
                out += [res.dense, res.bm25]
            return [[(h.pk, h.score, h.fields) for h in hits] for hits in out]

        monkeypatch.setattr(store_module, "engine_search", counted)
        direct = run()
        assert calls, "the engine was not asked"
        monkeypatch.setattr(store_module, "engine_search", lambda *a, **k: None)
        assert direct == run()
        assert any(h[2].get("dense_distance") for hits in direct for h in hits)
        assert (
            engine_search(
                str(tmp_path / "elsewhere.db"),
                "x",
                "redis",
                anns_field="sparse",
                limit=1,
                filter="",
                output_fields=[],
                search_params={"metric_type": "BM25"},
            )
            is None
        )
    finally:
        store.close()


def test_a_delete_drops_the_rows_from_the_merged_segment(tmp_path: Path) -> None:
    """A delete writes tombstones only; the one merged segment kept the deleted rows (in memory,
    in BM25's statistics) until a later write: ~100 MB after bench_memory's large documents."""
    from milvus_lite.server_manager import server_manager_instance

    uri = str(tmp_path / "delete.db")
    store = ChunkStore(uri, Unit(), collection="delete_probe")
    try:
        for doc, n in (("keep", 1), ("big", 50)):
            chunks = [Chunk(i, doc, f"{doc} chunk {i} about redis", 4) for i in range(n)]
            store.add_chunks(doc_id=doc, file_path=f"x/{doc}.md", category="x", chunks=chunks)
        col = server_manager_instance._servers[str(Path(uri).resolve())][1]
        col = col.get_collection("delete_probe")
        assert _data_files(uri, "delete_probe") == 1
        store.delete_doc("big")
        assert _data_files(uri, "delete_probe") == 1
        assert sum(s.num_rows for s in col._segments_snapshot()) == 1
        assert [h.fields["doc_id"] for h in store.search_bm25("redis", 10)] == ["keep"]
    finally:
        store.close()


def test_milvus_lite_buffers_come_from_the_trimmed_heap(tmp_path: Path) -> None:
    """Arrow's mimalloc kept freed pages resident (164 MB for 27 MB live after bench_memory's
    deletes); the system allocator's are handed back by ``release_freed_memory``."""
    import pyarrow as pa

    ChunkStore(str(tmp_path / "heap.db"), Unit(), collection="heap_probe").close()
    assert pa.default_memory_pool().backend_name == "system"
