"""The default model's threads: one torch intra-op thread per forward pass, queries beside imports.

On a shared 2-core machine two intra-op threads per pass spin against the other processes (a single
query took ~900 ms instead of ~40 ms, measured under load), and a query that waits behind an
import's batch waits seconds. Speed itself is measured by ``bench/bench_l1.py``; these tests pin
the behaviour that makes it: where the passes run, that a query does not wait for a document batch,
and that vectors computed concurrently are the vectors computed alone.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from retrieval.l1.e5_local import PASSAGE_PREFIX


@pytest.fixture
def passes(embeddings, monkeypatch: pytest.MonkeyPatch):
    """Every forward pass of the session model: (thread name, torch threads, rows, tokens)."""
    encoder = embeddings.encoder
    inner = encoder.pooled
    seen: list[tuple[str, int, int, int]] = []
    started = threading.Event()

    def pooled(ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        seen.append((threading.current_thread().name, torch.get_num_threads(), *ids.shape))
        started.set()
        return inner(ids, lengths)

    monkeypatch.setattr(encoder, "pooled", pooled)
    return seen, started


@pytest.fixture
def two_caller_threads():
    """The caller's own thread runs torch with two intra-op threads (torch's default on 2 cores)."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_every_pass_runs_with_one_intraop_thread_whatever_the_caller_uses(
    embeddings, passes, two_caller_threads
) -> None:
    seen, _ = passes
    embeddings.embed_query("HikariCP 连接池超时 after the threads test")
    embeddings.embed_documents([f"线程测试 passage {i} " * (40 * i + 1) for i in range(6)])
    assert seen
    assert {n for _, n, _, _ in seen} == {1}, seen
    assert all(name.startswith("e5-") for name, *_ in seen), seen


def test_a_query_does_not_wait_for_a_document_batch(embeddings, passes) -> None:
    seen, started = passes
    # One text of three to four windows: a single batch (≤ 4 × 512 tokens), seconds of work.
    pieces: list[str] = []
    while embeddings.count_tokens(PASSAGE_PREFIX + " ".join(pieces)) < 3.5 * embeddings.window:
        pieces.append(f"订单服务 order-{len(pieces)} 超时 timeout")
    long_text = " ".join(pieces)
    assert embeddings.count_tokens(PASSAGE_PREFIX + long_text) <= 4 * embeddings.window
    done = threading.Event()

    def importing() -> None:
        embeddings.embed_documents([long_text])
        done.set()

    t = threading.Thread(target=importing)
    t.start()
    assert started.wait(120)
    embeddings.embed_query("Redis 内存快满了 while a batch runs")
    query_first = not done.is_set()
    t.join(300)
    assert query_first, "the query waited until the document batch had finished"
    batch = next(s for s in seen if s[2] > 1)
    assert batch[2] * batch[3] >= 3 * 510  # it really was one long batch


def test_concurrent_calls_give_the_vectors_of_one_call_alone(embeddings) -> None:
    texts = [
        f"并发 concurrency check {i}: " + "连接池 pool timeout " * (30 * i + 1) for i in range(8)
    ]
    # The same two calls one after the other: a batch's padding shifts low-precision (bf16) results
    # by ~1e-4, so concurrency is judged against the very batches it ran, not one batch of all.
    alone = np.empty((len(texts), embeddings.dimension), dtype=np.float32)
    for k in range(2):
        alone[k::2] = embeddings._vectors(
            embeddings.encoder, [PASSAGE_PREFIX + t for t in texts[k::2]]
        )
    results: dict[int, np.ndarray] = {}

    def call(k: int) -> None:
        results[k] = np.asarray(embeddings.embed_documents(texts[k::2]))

    threads = [threading.Thread(target=call, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    queries = [embeddings.embed_query(f"查询 {i} during two imports") for i in range(3)]
    for t in threads:
        t.join(300)
    got = np.empty_like(alone)
    got[0::2], got[1::2] = results[0], results[1]
    assert np.abs(got - alone).max() < 1e-5
    assert all(abs(np.linalg.norm(q) - 1) < 1e-5 for q in queries)
