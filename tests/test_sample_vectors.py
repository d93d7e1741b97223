"""The shipped runbooks carry their vectors: a first start with the default model embeds nothing,
and what it stores is what the model itself would have made."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from retrieval.l1 import sample_vectors
from tests.support.kb import build_kb, kb_settings
from tests.support.paths import ROOT

pytestmark = pytest.mark.slow  # imports the 30 shipped runbooks

REGENERATE = "shipped vectors are stale: run `python -m retrieval.l1.sample_vectors`"


async def test_a_first_start_of_the_shipped_base_embeds_nothing(tmp_path: Path, embeddings) -> None:
    kb_dir = tmp_path / "knowledge_base"
    shutil.copytree(ROOT / "knowledge_base", kb_dir, ignore=shutil.ignore_patterns(".*"))
    kb = await build_kb(kb_settings(tmp_path, knowledge_base_dir=kb_dir), embeddings)
    try:
        report = await kb.start()
        assert report is not None and report.count("INDEXED") == 30
        cache = kb.store.vector_cache
        assert cache.misses == 0, f"{cache.misses} chunks embedded at first start; {REGENERATE}"
        assert cache.hits == kb.store.count() > 100
        # what was stored is what the model makes of those texts
        rows = kb.store.stored_chunks(file_paths=[r.file_path for r in report.results])[::40]
        stored = np.asarray([r.vector for r in rows])
        fresh = np.asarray(embeddings.embed_documents([r.text for r in rows]))
        assert (stored * fresh).sum(axis=1).min() >= 0.999
        assert np.allclose(np.linalg.norm(stored, axis=1), 1.0, atol=1e-4)
        # a lookup still embeds its query and finds the runbook
        out = kb.lookup("数据库连接池满了怎么办")
        assert out.payload["found"] is True
        assert out.payload["primary"]["source"] == "infrastructure/mysql-connection-pool.md"
    finally:
        await kb.close()
        await kb.db.dispose()


def test_another_model_gets_none() -> None:
    assert sample_vectors.load("local:all-MiniLM-L6-v2") == {}
