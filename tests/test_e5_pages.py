"""The model file's pages leave the resident set after the load and after each document batch.

The 4-bit word table is memory-mapped (``retrieval/l1/e5_file.py``); every page a batch read stayed
resident: 17 MB after the load, 67 MB after batches of varied text (measured), which counted as
memory a large upload never gave back (issue 20). The pages stay in the kernel's page cache.
"""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads smaps")


def resident_mb(path: Path) -> float:
    """This process's resident MB of mappings of ``path`` (``/proc/self/smaps``)."""
    kb, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            inside = line.endswith(str(path))
        elif inside and line.startswith("Rss:"):
            kb += int(line.split()[1])
    return kb / 1024


def varied_text(seed: int) -> list[str]:
    """Chinese and English text over much of the vocabulary: rows on many pages of the table."""
    rng = random.Random(seed)
    han = "".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(6000))
    words = " ".join(rng.choice(["pod", "redis", "超时", "lag"]) + str(i) for i in range(1500))
    return [han[i : i + 300] for i in range(0, len(han), 300)] + [words[:3000], words[3000:6000]]


def test_a_document_batch_leaves_no_model_file_pages_resident(embeddings) -> None:
    path = embeddings.file.path
    vectors = np.asarray(embeddings.embed_documents(varied_text(seed=20)))
    assert vectors.shape == (22, 384) and np.all(np.isfinite(vectors))
    assert resident_mb(path) < 2.0  # was 17-67 MB


def test_vectors_are_the_same_after_the_pages_were_dropped(embeddings) -> None:
    """A dropped page is read again from the page cache: the same rows, the same vectors."""
    texts = ["Kafka consumer lag 持续增长", "etcd 集群没有 leader 了"]
    rows = embeddings.file.word_rows(np.arange(0, 250_000, 997))
    embeddings.file.release_pages()
    assert np.array_equal(embeddings.file.word_rows(np.arange(0, 250_000, 997)), rows)
    q = np.asarray([embeddings.embed_query(t) for t in texts])
    embeddings.file.release_pages()
    embeddings._cache.clear()
    assert np.allclose(q, np.asarray([embeddings.embed_query(t) for t in texts]), atol=1e-6)
