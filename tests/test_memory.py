"""FS-3 action memory data structure, pure."""

import threading

from retrieval.l1.fusion import RouteHit, rrf
from retrieval.lookup.memory import SessionMemory, merge_retrieved


def test_fs3_acceptance() -> None:
    m = SessionMemory()
    m.mark("infrastructure", "a.md")
    assert m.is_doc_retrieved("a.md")
    assert m.is_domain_retrieved("infrastructure")
    assert m.domains() == ["infrastructure"]
    m.mark("api", "b.md")
    assert m.domains() == ["infrastructure", "api"]
    fresh = SessionMemory()  # each run starts with an empty memory
    assert fresh.domains() == [] and not fresh.is_doc_retrieved("a.md")


def test_sessions_are_isolated_under_concurrency() -> None:
    memories = {f"s{n}": SessionMemory() for n in range(8)}

    def worker(session: str) -> None:
        for i in range(300):
            memories[session].mark(f"d{i % 7}", f"{session}-{i}.md")

    threads = [threading.Thread(target=worker, args=(s,)) for s in memories]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name, mem in memories.items():
        paths = [p for ps in mem.retrieved.values() for p in ps]
        assert len(paths) == 300 and all(p.startswith(f"{name}-") for p in paths)
        assert mem.domains() == [f"d{i}" for i in range(7)]


def test_merge_is_a_union_that_keeps_first_order() -> None:
    left = {"infrastructure": ["a.md"], "api": ["b.md"]}
    right = {"api": ["b.md", "c.md"], "domain": ["d.md"]}
    assert merge_retrieved(left, right) == {
        "infrastructure": ["a.md"],
        "api": ["b.md", "c.md"],
        "domain": ["d.md"],
    }
    assert list(merge_retrieved(left, right)) == ["infrastructure", "api", "domain"]


def test_session_memory_copy_is_independent() -> None:
    a = SessionMemory.of({"x": ["1"]})
    b = SessionMemory.of(a.retrieved)
    b.mark("x", "2")
    assert a.retrieved == {"x": ["1"]}


def test_rrf_keeps_route_scores_and_weights() -> None:
    dense = [RouteHit("a", 0.2), RouteHit("b", 0.4)]
    bm25 = [RouteHit("b", 9.0), RouteHit("c", 5.0)]
    fused = rrf({"dense": dense, "bm25": bm25}, k=60)
    assert [h.pk for h in fused] == ["b", "a", "c"]
    b = fused[0]
    assert b.scores == {"dense": 0.4, "bm25": 9.0, "dense_distance": 0.4}
    assert b.ranks == {"dense": 2, "bm25": 1}
    assert b.rrf == 1 / 62 + 1 / 61
    heavy_bm25 = rrf({"dense": dense, "bm25": bm25}, {"dense": 0.1, "bm25": 1.0}, k=60)
    assert [h.pk for h in heavy_bm25] == ["b", "c", "a"]
