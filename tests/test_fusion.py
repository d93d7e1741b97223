"""Fusion by document, pure: a runbook that fills the top chunks counts once."""

from retrieval.l1.fusion import BM25_ROUTE, DENSE_ROUTE, L0_ROUTE, RouteHit, fuse_documents, rrf


def hit(pk: str, path: str, score: float, **fields: object) -> RouteHit:
    return RouteHit(pk, score, {"file_path": path, "chunk_index": int(pk[-1]), **fields})


DENSE = [
    hit("a:1", "a.md", 0.2),
    hit("a:2", "a.md", 0.3),
    hit("a:3", "a.md", 0.4),
    hit("b:1", "b.md", 0.5),
]
BM25 = [
    hit("b:1", "b.md", 9.0, dense_distance=0.5),
    hit("a:2", "a.md", 7.0, dense_distance=0.3),
    hit("c:1", "c.md", 6.0, dense_distance=1.1),
]


def test_documents_rank_by_their_best_chunk_per_route() -> None:
    docs = fuse_documents({DENSE_ROUTE: DENSE, BM25_ROUTE: BM25})
    assert [d.path for d in docs] == ["a.md", "b.md", "c.md"]
    a, b, c = docs
    # a's three dense chunks count once: b is second on the dense route, not fourth
    assert a.ranks == {DENSE_ROUTE: 1, BM25_ROUTE: 2} and b.ranks == {DENSE_ROUTE: 2, BM25_ROUTE: 1}
    assert a.rrf == b.rrf  # mirror images
    assert c.ranks == {BM25_ROUTE: 3}
    assert b.scores == {DENSE_ROUTE: 0.5, BM25_ROUTE: 9.0}


def test_every_chunk_keeps_its_dense_distance_and_chunks_are_ordered() -> None:
    docs = {d.path: d for d in fuse_documents({DENSE_ROUTE: DENSE, BM25_ROUTE: BM25})}
    assert [ch.pk for ch in docs["a.md"].chunks] == ["a:2", "a:1", "a:3"]  # a:2 is on both routes
    assert docs["c.md"].best_distance == 1.1  # found by BM25 only, distance from the stored vector
    assert docs["a.md"].best_distance == 0.2


def test_a_zero_weight_route_has_no_vote() -> None:
    docs = fuse_documents(
        {DENSE_ROUTE: DENSE, BM25_ROUTE: BM25}, {DENSE_ROUTE: 0.0, BM25_ROUTE: 1.0}
    )
    assert [d.path for d in docs] == ["b.md", "a.md", "c.md"]


def test_document_routes_join_the_fusion() -> None:
    docs = fuse_documents({BM25_ROUTE: BM25}, doc_routes={L0_ROUTE: ["c.md", "z.md"]})
    assert [d.path for d in docs][:2] == ["c.md", "b.md"]
    z = next(d for d in docs if d.path == "z.md")
    assert z.chunks == [] and z.ranks == {L0_ROUTE: 2}


def test_chunk_rrf_keeps_route_scores() -> None:
    fused = rrf({DENSE_ROUTE: DENSE, BM25_ROUTE: BM25}, limit=2)
    assert [f.pk for f in fused] == ["a:2", "b:1"]
    assert fused[1].scores == {DENSE_ROUTE: 0.5, BM25_ROUTE: 9.0, "dense_distance": 0.5}
